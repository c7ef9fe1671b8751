/* The clocks the programs read, in one place: wall time since the epoch
 * (comparable across processes: heartbeats, build-DB timestamps, cache
 * access times) and monotonic time (durations, deadlines, rates). */
#ifndef CV_COMMON_CLOCK_H
#define CV_COMMON_CLOCK_H

#include <stdint.h>

int64_t cv_clock_wall_ms(void);
int64_t cv_clock_wall_us(void);
int64_t cv_clock_mono_ms(void);
int64_t cv_clock_mono_us(void);
double  cv_clock_mono_s(void);
double  cv_clock_mono_ms_f(void);   /* milliseconds with a fraction (timings) */

#endif
