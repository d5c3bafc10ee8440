/* What curl releases differ in. At compile time: what the oldest supported
 * curl (7.76.1, RHEL 9's) lacks of what respchain uses, by the release that
 * added it; a name curl has not yet is given curl's own value where the
 * older curl means the same by it; a feature it has not is compiled out
 * (RC__HAVE_*), and what depends on it says what happens without it. At
 * run time: what the libcurl loaded does differently, as measured
 * (rc__transfer_hold_from in transfer.c tells when a stream can be held).
 * Internal. */
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

/* The version of the libcurl loaded (0 if it does not say). */
static inline unsigned int rc__curl_version(void)
{
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  return v ? v->version_num : 0;
}

/* curl before 7.88 loses data of an HTTP/2 stream paused while the others
 * of its connection go on (measured: 7.76.1 ends such transfers with
 * CURLE_PARTIAL_FILE, 7.81.0 with CURLE_HTTP2_STREAM; 7.88.1 keeps what
 * arrives, up to 64 MiB a stream). */
static inline int rc__curl_loses_paused_streams(void) { return rc__curl_version() < 0x075800; }

/* curl 8.1 to 8.6 read every HTTP/2 stream into their own buffers from its
 * request on, up to its 10 MB window, paused or not, even with a write
 * callback that keeps nothing (8.5.0: 400 MiB for 50 streams of 8 MiB). */
static inline int rc__curl_buffers_streams(void)
{
  unsigned int num = rc__curl_version();
  return num >= 0x080100 && num < 0x080700;
}

#endif
