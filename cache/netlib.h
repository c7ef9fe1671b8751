/* Moved to common/netlib.h; this forwarder goes once nothing includes it. */
#ifndef CV_CACHE_NETLIB_H
#define CV_CACHE_NETLIB_H
#include "common/netlib.h"
#define cv_cache_curl cv_netlib_curl
#define cv_cache_mhd cv_netlib_mhd
#endif
