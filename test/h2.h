/*
 * HTTP/2-over-TLS test server: a real nginx, started as a child process on
 * 127.0.0.1 by the test that needs it, serving static files.
 *
 * HTTP/2 is tested over TLS with ALPN; nginx also serves cleartext HTTP/2
 * with prior knowledge (h2c_url), whose connections curl reuses from 8.0.0
 * on (curl 7.88 fails the second transfer on one). h2_start makes a fresh
 * temporary directory (mkdtemp under $TMPDIR or /tmp) holding nginx's
 * configuration, logs, pid file and temp paths, a self-signed certificate
 * for 127.0.0.1 and localhost made with the openssl CLI, and the files
 * served:
 *
 *   /p/0, /p/1k, /p/100k, /p/1m, /p/8m   the first 0, 1024, 102400, 1 MiB
 *                                        and 8 MiB bytes of the HTTP/1.1
 *                                        test server's pattern
 *                                        (ts_pattern_fill, test/server.h)
 *   /gz/1m                               the 1 MiB pattern gzip-compressed,
 *                                        served with Content-Encoding: gzip
 *
 * and whatever a test writes into the directory that h2_docroot names:
 * files under gz/, br/ and zst/ there are served with Content-Encoding
 * gzip, br and zstd.
 *
 * nginx runs as one process (master_process off), so a signal reaches all
 * of it. It gets SIGTERM when the thread that started it ends
 * (PR_SET_PDEATHSIG, on Linux), so a test that crashes or is killed does
 * not leave it running; a small shell, started with it, removes the
 * directory if the process ends without h2_stop (a failed assertion in a
 * forked test skips the teardown). Start and stop servers from one thread,
 * inside each test (or a checked fixture), not in Check's parent process:
 * Check forks per test.
 */
#ifndef RC_TEST_H2_H
#define RC_TEST_H2_H

#include <stddef.h>
#include <curl/curl.h>

typedef struct h2_server h2_server;

/* Starts nginx on 127.0.0.1 on two free ports, TLS and HTTP/2 on one and
 * cleartext HTTP/2 on the other, and waits until both accept connections.
 * NULL, with the reason on stderr, if nginx or openssl is missing or nginx
 * does not come up within about 5 s. */
h2_server *h2_start(void);

/* Writes "https://127.0.0.1:PORT" + path into buf (path starts with '/'). */
void h2_url(const h2_server *s, const char *path, char *buf, size_t n);

/* The port nginx listens on. */
int h2_port(const h2_server *s);

/* Writes "http://127.0.0.1:PORT" + path into buf, where nginx serves the
 * same files over cleartext HTTP/2 to clients that speak it first
 * (CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE; HTTP/1.1 requests fail there). */
void h2c_url(const h2_server *s, const char *path, char *buf, size_t n);

/* The server's certificate (PEM), to pass as CURLOPT_CAINFO. */
const char *h2_cafile(const h2_server *s);

/* Writes the directory nginx serves into buf (a file written there is
 * served at once); -1 if it does not fit. */
int h2_docroot(const h2_server *s, char *buf, size_t n);

/* Sets on easy: CURLOPT_CAINFO, CURLOPT_HTTP_VERSION
 * CURL_HTTP_VERSION_2TLS, and CURLOPT_PIPEWAIT 1, so that transfers added
 * to one multi handle at once share one connection instead of each opening
 * its own before the first has learnt that the server multiplexes. */
void h2_easy_setup(const h2_server *s, CURL *easy);

/* Stops nginx (SIGQUIT, then SIGKILL if it is still there after 5 s),
 * reaps it and removes the temporary directory. NULL is ignored. */
void h2_stop(h2_server *s);

#endif
