/* The two clocks the programs read: wall time in milliseconds since the
 * epoch (comparable across processes: heartbeats, build-DB timestamps) and
 * monotonic seconds (durations, rates). */
#ifndef CV_COMMON_CLOCK_H
#define CV_COMMON_CLOCK_H

#include <stdint.h>

int64_t cv_clock_wall_ms(void);
double  cv_clock_mono_s(void);

#endif
