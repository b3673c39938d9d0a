// nvbandwidth's blocking kernel: one thread holds the stream until the host writes the flag
// (in mapped pinned memory), so every copy enqueued behind it starts together and host
// submission never enters the timed window.

extern "C" __global__ void spin_until(volatile int* flag, unsigned long long max_spins) {
    unsigned long long spins = 0;
    while (*flag == 0 && ++spins < max_spins) {
        __nanosleep(100);
    }
}
