/* The platform floor for a sampler: CPU time of a C thread that wakes RATE times a second
 * (absolute-deadline clock_nanosleep, like the Python sampler's schedule) and preads each
 * file named on the command line, for SECONDS. Prints that CPU time in seconds.
 * Built and run by benchmarks/bench_sampler.py when a C compiler is present; it is a
 * yardstick for the Python sampler, not part of the package.
 *
 * usage: wakeup_floor RATE SECONDS [FILE...]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s RATE SECONDS [FILE...]\n", argv[0]);
        return 2;
    }
    double rate = atof(argv[1]), seconds = atof(argv[2]);
    int nfiles = argc - 3;
    int *fds = calloc(nfiles > 0 ? nfiles : 1, sizeof(int));
    for (int i = 0; i < nfiles; i++) {
        fds[i] = open(argv[3 + i], O_RDONLY | O_CLOEXEC);
        if (fds[i] < 0) {
            perror(argv[3 + i]);
            return 1;
        }
    }
    long period_ns = (long)(1e9 / rate), wakes = (long)(rate * seconds);
    struct timespec due, cpu0, cpu1;
    char buf[64];
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    clock_gettime(CLOCK_MONOTONIC, &due);
    for (long k = 0; k < wakes; k++) {
        for (int i = 0; i < nfiles; i++) {
            if (pread(fds[i], buf, sizeof buf, 0) < 0) {
                perror("pread");
                return 1;
            }
        }
        due.tv_nsec += period_ns;
        while (due.tv_nsec >= 1000000000L) {
            due.tv_nsec -= 1000000000L;
            due.tv_sec += 1;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    printf("%.9f\n", (double)(cpu1.tv_sec - cpu0.tv_sec) + (cpu1.tv_nsec - cpu0.tv_nsec) * 1e-9);
    free(fds);
    return 0;
}
