/* HTTP/2-over-TLS test server: nginx as a child process (see h2.h). */
#define _XOPEN_SOURCE 700 /* nftw */

#include "h2.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "server.h"

#define H2_PATH    1024
#define H2_TRIES   5    /* ports tried when nginx cannot bind */
#define H2_WAIT_MS 5000 /* for nginx to come up, and to go away */
#define H2_POLL_MS 20
#define MiB        ((size_t)1 << 20)

struct h2_server {
  pid_t pid;      /* nginx; 0 once reaped */
  pid_t janitor;  /* removes dir if this process dies; 0: none */
  int janitor_fd; /* its pipe: end of file tells it to */
  int port;
  int h2c_port;      /* cleartext HTTP/2 (prior knowledge) */
  char dir[H2_PATH]; /* the temporary directory, holding it all */
  char cafile[H2_PATH];
};

/* The files served, each the first size bytes of the pattern. */
static const struct {
  const char *name;
  size_t size;
} served[] = {
    {"p/0", 0}, {"p/1k", 1024}, {"p/100k", 102400}, {"p/1m", MiB}, {"p/8m", 8 * MiB},
};
#define LARGEST (8 * MiB)

static void sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
    ;
}

/* out = s->dir + "/" + name; -1 if it does not fit. */
static int path_in(const h2_server *s, const char *name, char *out)
{
  int n = snprintf(out, H2_PATH, "%s/%s", s->dir, name);
  return n < 0 || n >= H2_PATH ? -1 : 0;
}

/* The executable fallback if there is one, else name found in $PATH. */
static int find_program(const char *name, const char *fallback, char *out)
{
  if (access(fallback, X_OK) == 0) {
    snprintf(out, H2_PATH, "%s", fallback);
    return 0;
  }
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t len = strcspn(path, ":");
    int n = snprintf(out, H2_PATH, "%.*s/%s", (int)len, path, name);
    if (len && n > 0 && n < H2_PATH && access(out, X_OK) == 0)
      return 0;
    path += len + (path[len] == ':');
  }
  fprintf(stderr, "h2: %s not found (tried %s and $PATH)\n", name, fallback);
  return -1;
}

/* Runs argv[0] with stdin from /dev/null and stdout and stderr appended to
 * log. On Linux the child gets SIGTERM when this thread ends, so a crashed
 * test does not leave it behind. Returns the child's pid, or -1. */
static pid_t spawn(char *const argv[], const char *log)
{
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) {
    if (pid < 0)
      perror("h2: fork");
    return pid;
  }
  /* The child: async-signal-safe calls only until exec. */
#ifdef __linux__
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 || getppid() != parent)
    _exit(126);
#endif
  int in = open("/dev/null", O_RDONLY);
  int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
    _exit(126);
  execv(argv[0], argv);
  _exit(127);
}

/* Copies the file at path to stderr, for a failure's explanation. */
static void dump_file(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f))
    fprintf(stderr, "  | %s", line);
  fclose(f);
}

static int write_file(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(data, 1, n, f) == n;
  if (f && fclose(f) != 0)
    ok = 0;
  if (!ok)
    fprintf(stderr, "h2: cannot write %s: %s\n", path, strerror(errno));
  return ok ? 0 : -1;
}

/* The openssl configuration for a self-signed certificate valid for
 * 127.0.0.1 and localhost, usable as its own trust anchor. Our own file,
 * so that the system's openssl.cnf plays no part. */
static const char openssl_cnf[] = "[req]\n"
                                  "distinguished_name = dn\n"
                                  "prompt = no\n"
                                  "x509_extensions = v3\n"
                                  "[dn]\n"
                                  "CN = 127.0.0.1\n"
                                  "[v3]\n"
                                  "subjectAltName = IP:127.0.0.1,DNS:localhost\n"
                                  "basicConstraints = critical,CA:TRUE\n"
                                  "subjectKeyIdentifier = hash\n";

/* Makes key.pem and cert.pem (EC P-256) in the directory with openssl. */
static int make_cert(h2_server *s)
{
  char openssl[H2_PATH], cnf[H2_PATH], key[H2_PATH], log[H2_PATH];
  if (find_program("openssl", "/usr/bin/openssl", openssl) != 0 || path_in(s, "openssl.cnf", cnf) ||
      path_in(s, "key.pem", key) || path_in(s, "cert.pem", s->cafile) ||
      path_in(s, "openssl.log", log) || write_file(cnf, openssl_cnf, sizeof openssl_cnf - 1) != 0)
    return -1;
  char *argv[] = {openssl,   "req",      "-x509",
                  "-config", cnf,        "-newkey",
                  "ec",      "-pkeyopt", "ec_paramgen_curve:P-256",
                  "-nodes",  "-keyout",  key,
                  "-out",    s->cafile,  "-days",
                  "2",       NULL};
  pid_t pid = spawn(argv, log);
  int st;
  if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return 0;
  fprintf(stderr, "h2: openssl could not make the certificate:\n");
  dump_file(log);
  return -1;
}

/* The n bytes at in, gzip-compressed (zlib's gzip wrapper) into a malloc'd
 * buffer; NULL on failure. */
static unsigned char *gzip_of(const unsigned char *in, size_t n, size_t *outlen)
{
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return NULL;
  size_t cap = deflateBound(&z, (uLong)n) + 64; /* + the gzip wrapper */
  unsigned char *out = malloc(cap);
  z.next_in = (unsigned char *)in;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  int rc = out ? deflate(&z, Z_FINISH) : Z_MEM_ERROR;
  *outlen = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    free(out);
    return NULL;
  }
  return out;
}

/* Writes the gzip of the first n pattern bytes (in) to path. */
static int write_gzip(const char *path, const unsigned char *in, size_t n)
{
  size_t len;
  unsigned char *gz = gzip_of(in, n, &len);
  if (!gz) {
    fprintf(stderr, "h2: gzip failed\n");
    return -1;
  }
  int rc = write_file(path, gz, len);
  free(gz);
  return rc;
}

/* Makes the directories nginx needs and the files it serves. */
static int make_docroot(h2_server *s)
{
  static const char *const dirs[] = {"www", "www/p", "www/gz", "www/br", "www/zst", "tmp"};
  char path[H2_PATH];
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    if (path_in(s, dirs[i], path) || mkdir(path, 0700) != 0) {
      fprintf(stderr, "h2: mkdir %s: %s\n", path, strerror(errno));
      return -1;
    }
  unsigned char *pat = malloc(LARGEST);
  if (!pat) {
    fprintf(stderr, "h2: out of memory\n");
    return -1;
  }
  ts_pattern_fill(pat, 0, LARGEST);
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < sizeof served / sizeof served[0]; i++) {
    char name[64];
    snprintf(name, sizeof name, "www/%s", served[i].name);
    rc = path_in(s, name, path) || write_file(path, pat, served[i].size);
  }
  if (rc == 0)
    rc = path_in(s, "www/gz/1m", path) || write_gzip(path, pat, MiB);
  free(pat);
  return rc ? -1 : 0;
}

/* A port on 127.0.0.1 that was free a moment ago, or -1. */
static int free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

/* nginx.conf: one process in the foreground, every path inside the
 * directory, TLS + HTTP/2 on 127.0.0.1:port and cleartext HTTP/2 (prior
 * knowledge only) on 127.0.0.1:h2c_port, static files only. @D@ stands for
 * the directory, @P@ for the port, @Q@ for the h2c port, @U@ for the user
 * line. */
static const char nginx_conf[] =
    "daemon off;\n"
    "master_process off;\n" /* one process: signals reach all of it */
    "worker_processes 1;\n"
    "@U@"
    "pid \"@D@/nginx.pid\";\n"
    "lock_file \"@D@/nginx.lock\";\n"
    "error_log \"@D@/error.log\" warn;\n"
    "events { worker_connections 1024; }\n"
    "http {\n"
    "  access_log off;\n"
    "  client_body_temp_path \"@D@/tmp/body\";\n"
    "  proxy_temp_path \"@D@/tmp/proxy\";\n"
    "  fastcgi_temp_path \"@D@/tmp/fastcgi\";\n"
    "  uwsgi_temp_path \"@D@/tmp/uwsgi\";\n"
    "  scgi_temp_path \"@D@/tmp/scgi\";\n"
    "  types { }\n"
    "  default_type application/octet-stream;\n"
    "  sendfile on;\n"
    "  gzip off;\n" /* /gz/ is compressed already */
    "  keepalive_requests 100000;\n"
    "  http2_max_concurrent_streams 256;\n"
    "  server {\n"
    "    listen 127.0.0.1:@P@ ssl http2;\n"
    "    listen 127.0.0.1:@Q@ http2;\n"
    "    server_name localhost;\n"
    "    ssl_certificate \"@D@/cert.pem\";\n"
    "    ssl_certificate_key \"@D@/key.pem\";\n"
    "    ssl_protocols TLSv1.2 TLSv1.3;\n" /* 1.22's default lacks 1.3 */
    "    root \"@D@/www\";\n"
    "    location /gz/ { add_header Content-Encoding gzip; }\n"
    "    location /br/ { add_header Content-Encoding br; }\n"
    "    location /zst/ { add_header Content-Encoding zstd; }\n"
    "  }\n"
    "}\n";

/* Appends the template to out (of size n, at *len), each @X@ replaced by
 * vals[X - 'A']; -1 if it does not fit. */
static int expand(const char *tpl, const char *const vals[26], char *out, size_t n, size_t *len)
{
  for (const char *p = tpl; *p; p++) {
    const char *v = p;
    size_t k = 1;
    if (p[0] == '@' && p[1] >= 'A' && p[1] <= 'Z' && p[2] == '@' && vals[p[1] - 'A']) {
      v = vals[p[1] - 'A'];
      k = strlen(v);
      p += 2;
    }
    if (*len + k >= n)
      return -1;
    memcpy(out + *len, v, k);
    *len += k;
  }
  out[*len] = '\0';
  return 0;
}

static int write_conf(h2_server *s)
{
  char path[H2_PATH], port[16], h2c_port[16], conf[8192];
  const char *vals[26] = {0};
  vals['D' - 'A'] = s->dir;
  vals['P' - 'A'] = port;
  vals['Q' - 'A'] = h2c_port;
  /* As root, nginx would otherwise switch to nobody, who cannot read the
   * 0700 directory; as anyone else the directive is ignored with a warning. */
  vals['U' - 'A'] = geteuid() == 0 ? "user root;\n" : "";
  snprintf(port, sizeof port, "%d", s->port);
  snprintf(h2c_port, sizeof h2c_port, "%d", s->h2c_port);
  size_t len = 0;
  if (expand(nginx_conf, vals, conf, sizeof conf, &len) != 0 || path_in(s, "nginx.conf", path))
    return -1;
  return write_file(path, conf, len);
}

/* Nonzero when 127.0.0.1:port accepts a connection. */
static int accepts(int port)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (fd >= 0)
    close(fd);
  return ok;
}

/* Nonzero once nginx has written its pid file, which it does only after
 * binding its listening socket: proof that the port is nginx's. */
static int pid_file_written(const h2_server *s)
{
  char path[H2_PATH];
  long pid = 0;
  FILE *f = path_in(s, "nginx.pid", path) ? NULL : fopen(path, "r");
  if (f) {
    if (fscanf(f, "%ld", &pid) != 1)
      pid = 0;
    fclose(f);
  }
  return pid == (long)s->pid;
}

/* Waits for nginx to serve: 0 when it does, 1 if it exited (reaped), -1
 * if it is still not serving after H2_WAIT_MS. */
static int wait_ready(h2_server *s)
{
  for (long waited = 0; waited < H2_WAIT_MS; waited += H2_POLL_MS) {
    if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
      s->pid = 0;
      return 1;
    }
    if (pid_file_written(s) && accepts(s->port) && accepts(s->h2c_port))
      return 0;
    sleep_ms(H2_POLL_MS);
  }
  return -1;
}

/* Signals sig to nginx and waits up to ms for it to exit; 0 once reaped. */
static int signal_and_wait(h2_server *s, int sig, long ms)
{
  kill(s->pid, sig);
  for (long waited = 0; waited <= ms; waited += H2_POLL_MS) {
    if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
      s->pid = 0;
      return 0;
    }
    sleep_ms(H2_POLL_MS);
  }
  return -1;
}

/* Stops nginx gracefully (SIGQUIT), by force after H2_WAIT_MS. */
static void stop_nginx(h2_server *s)
{
  if (s->pid > 0 && signal_and_wait(s, SIGQUIT, H2_WAIT_MS) != 0) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
  }
}

/* Starts nginx on fresh free ports, up to H2_TRIES times (another process
 * may take a port between free_port and nginx's bind; nginx then retries
 * the bind for about 2.5 s before it exits). */
static int launch(h2_server *s)
{
  char nginx[H2_PATH], conf[H2_PATH], log[H2_PATH], err[H2_PATH];
  char prefix[H2_PATH];
  if (find_program("nginx", "/usr/sbin/nginx", nginx) != 0 || path_in(s, "nginx.conf", conf) ||
      path_in(s, "nginx.out", log) || path_in(s, "error.log", err) || path_in(s, "", prefix))
    return -1;
  /* -e: errors before the configuration is read go there too, not to the
   * compiled-in log path; -p: relative paths stay inside the directory. */
  char *argv[] = {nginx, "-p", prefix, "-c", conf, "-e", err, NULL};
  for (int t = 0; t < H2_TRIES; t++) {
    if ((s->port = free_port()) < 0 || (s->h2c_port = free_port()) < 0)
      return -1;
    if (s->h2c_port == s->port)
      continue;
    if (write_conf(s) != 0)
      return -1;
    if ((s->pid = spawn(argv, log)) < 0)
      return -1;
    int r = wait_ready(s);
    if (r == 0)
      return 0;
    if (r < 0) {
      fprintf(stderr, "h2: nginx did not accept connections within %d ms\n", H2_WAIT_MS);
      stop_nginx(s);
      break;
    }
  }
  fprintf(stderr, "h2: nginx did not start; its output and error log:\n");
  dump_file(log);
  dump_file(err);
  return -1;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(path) == 0 ? 0 : -1;
}

/* Removes the temporary directory and everything in it. */
static void remove_tree(const char *dir)
{
  if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "h2: could not remove %s\n", dir);
}

/* A fresh directory under $TMPDIR or /tmp into s->dir; -1 on failure. */
static int make_dir(h2_server *s)
{
  const char *tmp = getenv("TMPDIR");
  int n = snprintf(s->dir, sizeof s->dir, "%s/respchain-h2-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (n < 0 || (size_t)n >= sizeof s->dir || !mkdtemp(s->dir)) {
    fprintf(stderr, "h2: mkdtemp %s: %s\n", s->dir, strerror(errno));
    return -1;
  }
  return 0;
}

/* Starts a shell that removes the directory if this process ends without
 * h2_stop (a failed assertion in a forked Check test ends it with _exit,
 * skipping the teardown; a timeout kills it): it waits for end of file on a
 * pipe whose write end only this process holds, gives nginx, which gets
 * SIGTERM at the same moment, a second to go, and removes the directory.
 * In its own session, to outlive a kill of the test's process group. */
static int start_janitor(h2_server *s)
{
  static const char script[] = "read -r _; sleep 1; rm -rf \"$1\"";
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  /* Children that exec (openssl, nginx) must not hold the write end. */
  pid_t pid = fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0 ? fork() : -1;
  if (pid == 0) {
    int nul = open("/dev/null", O_RDWR);
    if (setsid() < 0 || nul < 0 || dup2(fds[0], 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
      _exit(126);
    execl("/bin/sh", "sh", "-c", script, "sh", s->dir, (char *)NULL);
    _exit(127);
  }
  close(fds[0]);
  if (pid < 0) {
    close(fds[1]);
    return -1;
  }
  s->janitor = pid;
  s->janitor_fd = fds[1];
  return 0;
}

/* Dismisses the janitor: h2_stop cleans up itself. */
static void stop_janitor(h2_server *s)
{
  if (s->janitor <= 0)
    return;
  kill(s->janitor, SIGKILL);
  waitpid(s->janitor, NULL, 0);
  close(s->janitor_fd);
  s->janitor = 0;
}

h2_server *h2_start(void)
{
  h2_server *s = calloc(1, sizeof *s);
  if (!s || make_dir(s) != 0) {
    free(s);
    return NULL;
  }
  if (start_janitor(s) != 0 || make_cert(s) != 0 || make_docroot(s) != 0 || launch(s) != 0) {
    h2_stop(s);
    return NULL;
  }
  return s;
}

void h2_url(const h2_server *s, const char *path, char *buf, size_t n)
{
  snprintf(buf, n, "https://127.0.0.1:%d%s", s->port, path);
}

int h2_port(const h2_server *s) { return s->port; }

void h2c_url(const h2_server *s, const char *path, char *buf, size_t n)
{
  snprintf(buf, n, "http://127.0.0.1:%d%s", s->h2c_port, path);
}

const char *h2_cafile(const h2_server *s) { return s->cafile; }

int h2_docroot(const h2_server *s, char *buf, size_t n)
{
  int len = snprintf(buf, n, "%s/www", s->dir);
  return len < 0 || (size_t)len >= n ? -1 : 0;
}

void h2_easy_setup(const h2_server *s, CURL *easy)
{
  curl_easy_setopt(easy, CURLOPT_CAINFO, s->cafile);
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
}

void h2_stop(h2_server *s)
{
  if (!s)
    return;
  stop_janitor(s);
  stop_nginx(s);
  remove_tree(s->dir);
  free(s);
}
