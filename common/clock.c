#include "common/clock.h"

#include <time.h>

/* The clock id's time in units of 1/per_s seconds. */
static int64_t in_units(clockid_t id, int64_t per_s)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * per_s + ts.tv_nsec / (1000000000 / per_s);
}

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t cv_clock_wall_ms(void) { return in_units(CLOCK_REALTIME, 1000); }
int64_t cv_clock_wall_us(void) { return in_units(CLOCK_REALTIME, 1000000); }
int64_t cv_clock_mono_ms(void) { return in_units(CLOCK_MONOTONIC, 1000); }
int64_t cv_clock_mono_us(void) { return in_units(CLOCK_MONOTONIC, 1000000); }
double cv_clock_mono_s(void) { return seconds(CLOCK_MONOTONIC); }
double cv_clock_mono_ms_f(void) { return seconds(CLOCK_MONOTONIC) * 1e3; }
