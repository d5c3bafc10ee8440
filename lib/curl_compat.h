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
#include <stdatomic.h>

/* 7.87: a name for the write callbacks' error return. Before it, any value
 * but the count given fails the transfer (CURLE_WRITE_ERROR) all the same. */
#ifndef CURL_WRITEFUNC_ERROR
#define CURL_WRITEFUNC_ERROR 0xFFFFFFFF
#endif

/* 7.80: CURLOPT_PREREQFUNCTION, called before each request is sent. */
#define RC__HAVE_PREREQ (LIBCURL_VERSION_NUM >= 0x075000)

/* The version of the libcurl loaded (0 if it does not say). Asked once:
 * curl_version_info formats its version strings on each call (8.x: some
 * 3,500 instructions), and the loop functions ask on every transfer and
 * every poll. */
static inline unsigned int rc__curl_version(void)
{
  static atomic_uint known; /* 0: not asked yet */
  unsigned int num = atomic_load_explicit(&known, memory_order_relaxed);
  if (num)
    return num;
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  num = v ? v->version_num : 0;
  atomic_store_explicit(&known, num, memory_order_relaxed);
  return num;
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

/* curl 8.1 can leave work of an HTTP/2 stream undone, with no timer to
 * come back for it, until the next curl_multi_perform: bytes it read into
 * its buffers, requests it did not send. 8.1.2, bench h2 under a budget:
 * the last streams of a run waited so for the whole timeout of the poll
 * (1 s) in 5 runs of 9, their bytes read from the socket; curl alone with
 * 5 streams at once does the same, also in the middle of a run (nginx
 * idle, the requests sent when the poll's timeout ran out). With many
 * streams at once the others' traffic soon brings that call; with the few
 * that a budget lets run, nothing does. Not seen with 8.5.0 (the same
 * runs); 8.2 to 8.4 were not measured and are taken as 8.1. */
static inline int rc__curl_strands_streams(void)
{
  unsigned int num = rc__curl_version();
  return num >= 0x080100 && num < 0x080500;
}

#endif
