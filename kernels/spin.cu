// nvbandwidth's blocking kernel: one thread holds the stream until the host writes flag[0]
// (in mapped pinned memory), so every copy enqueued behind it starts together and host
// submission never enters the timed window. The wait is bounded in time, not in polls (a poll
// count is tens of seconds on one GPU and milliseconds on another): after `timeout_ns` of the
// GPU's global nanosecond timer the kernel gives up and sets flag[1]; that sample's window holds
// submission time too, and the timer refuses it. A gate can therefore never hang a case.

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void spin_until(volatile int* flag, unsigned long long timeout_ns) {
    const unsigned long long start = global_ns();
    while (flag[0] == 0) {
        if (global_ns() - start >= timeout_ns) {
            flag[1] = 1;
            return;
        }
        __nanosleep(100);
    }
}
