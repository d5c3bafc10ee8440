/* What the oldest supported curl (7.76.1, RHEL 9's) lacks of what respchain
 * uses, by the release that added it. A name curl has not yet is given
 * curl's own value where the older curl means the same by it; a feature it
 * has not is compiled out (RC__HAVE_*), and what depends on it says what
 * happens without it. Internal. */
#ifndef RC_CURL_COMPAT_H
#define RC_CURL_COMPAT_H

#include <curl/curl.h>

/* 7.87: a name for the write callbacks' error return. Before it, any value
 * but the count given fails the transfer (CURLE_WRITE_ERROR) all the same. */
#ifndef CURL_WRITEFUNC_ERROR
#define CURL_WRITEFUNC_ERROR 0xFFFFFFFF
#endif

/* 7.80: CURLOPT_PREREQFUNCTION, called before each request is sent. */
#define RC__HAVE_PREREQ (LIBCURL_VERSION_NUM >= 0x075000)

#endif
