// nvbandwidth's blocking kernel: one thread holds the stream until the host writes flag[0]
// (in mapped pinned memory), so every copy enqueued behind it starts together and host
// submission never enters the timed window. If the host takes longer than `max_spins` to
// release it, the kernel gives up and sets flag[1]: that sample's window holds submission
// time too, and the timer refuses it.

extern "C" __global__ void spin_until(volatile int* flag, unsigned long long max_spins) {
    unsigned long long spins = 0;
    while (flag[0] == 0) {
        if (++spins >= max_spins) {
            flag[1] = 1;
            return;
        }
        __nanosleep(100);
    }
}
