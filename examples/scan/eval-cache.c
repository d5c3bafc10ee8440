/* scan's disk cache of compiled databases: bytes kept under a key made of
 * everything that went into them, so that a scan with the same templates
 * on the same machine reads its databases instead of compiling them again
 * (eval-vs.c makes the keys and the bytes; nothing here knows what they
 * hold).
 *
 * Where: $XDG_CACHE_HOME/respchain-scan, else ~/.cache/respchain-scan,
 * one file per key, named by the key in hex. A file is used only when the
 * directory and the file are the user's own and no one else may write
 * them (what keeps another user's bytes out of the engine), its header
 * names its own key, and the SHA-256 of what it holds matches (what finds
 * a file cut short or spoiled): anything else is a miss, and the bytes
 * are made again and the file written anew. Files are written whole under
 * a temporary name and renamed, so a reader never sees half of one. A
 * directory that cannot be made, read or written only costs the time:
 * every failure here is a miss, never an error of the scan. At most
 * CACHE_FILES files are kept, the least recently written going first,
 * and a temporary file left by a scan that was killed goes after an hour. */
#include "eval.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAGIC "RCSCDB01"
#define CACHE_FILES 128
#define CACHE_LARGEST (1024L * 1024 * 1024) /* bytes of a file read, at most */
#define SUFFIX ".db"
#define TMP_SUFFIX ".tmp"
#define TMP_AGE 3600 /* seconds after which a temporary file is a dead scan's */

/* What a file starts with. */
typedef struct header {
  char magic[8];
  unsigned char key[CACHE_KEY];
  unsigned char sum[CACHE_KEY]; /* SHA-256 of the bytes that follow */
  uint64_t len;                 /* of those bytes */
  uint64_t kind;                /* what they are, as the caller says */
} header;

int cache_key_init(cache_key *k)
{
  k->ctx = EVP_MD_CTX_new();
  if (k->ctx && EVP_DigestInit_ex(k->ctx, EVP_sha256(), NULL) == 1)
    return 0;
  EVP_MD_CTX_free(k->ctx);
  k->ctx = NULL;
  return -1;
}

void cache_key_add(cache_key *k, const void *p, size_t len)
{
  /* The length first, so that ("ab", "c") and ("a", "bc") differ. */
  uint64_t n = len;
  if (k->ctx && (EVP_DigestUpdate(k->ctx, &n, sizeof n) != 1 ||
                 EVP_DigestUpdate(k->ctx, p, len) != 1)) {
    EVP_MD_CTX_free(k->ctx);
    k->ctx = NULL;
  }
}

int cache_key_end(cache_key *k, unsigned char out[CACHE_KEY])
{
  unsigned n = 0;
  int ok = k->ctx && EVP_DigestFinal_ex(k->ctx, out, &n) == 1 && n == CACHE_KEY;
  EVP_MD_CTX_free(k->ctx);
  k->ctx = NULL;
  return ok ? 0 : -1;
}

static int sha256(const void *p, size_t len, unsigned char out[CACHE_KEY])
{
  unsigned n = 0;
  return EVP_Digest(p, len, out, &n, EVP_sha256(), NULL) == 1 && n == CACHE_KEY ? 0 : -1;
}

/* Whether st is the user's own and no one else may write it. */
static int own(const struct stat *st)
{
  return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* The cache's directory into out; -1 when there is none to name. */
static int cache_dir(char *out, size_t cap)
{
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') /* the spec: a relative path is to be ignored */
    n = snprintf(out, cap, "%s/respchain-scan", xdg);
  else if (home && home[0])
    n = snprintf(out, cap, "%s/.cache/respchain-scan", home);
  else
    return -1;
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The path of key's file into out. */
static int cache_path(const unsigned char key[CACHE_KEY], char *out, size_t cap)
{
  char dir[4096];
  if (cache_dir(dir, sizeof dir) != 0)
    return -1;
  char hex[2 * CACHE_KEY + 1];
  for (size_t i = 0; i < CACHE_KEY; i++)
    snprintf(hex + 2 * i, 3, "%02x", key[i]);
  int n = snprintf(out, cap, "%s/%s" SUFFIX, dir, hex);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

static int read_all(int fd, void *p, size_t len)
{
  for (size_t done = 0; done < len;) {
    ssize_t n = read(fd, (char *)p + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    done += (size_t)n;
  }
  return 0;
}

void *cache_get(const unsigned char key[CACHE_KEY], int *kind, size_t *len)
{
  char path[4200];
  if (cache_path(key, path, sizeof path) != 0)
    return NULL;
  char dir[4096];
  struct stat st;
  if (cache_dir(dir, sizeof dir) != 0 || stat(dir, &st) != 0 || !own(&st))
    return NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return NULL;
  header h;
  void *p = NULL;
  unsigned char sum[CACHE_KEY];
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && own(&st) && st.st_size >= (off_t)sizeof h &&
      st.st_size <= CACHE_LARGEST &&
      read_all(fd, &h, sizeof h) == 0 && !memcmp(h.magic, CACHE_MAGIC, sizeof h.magic) &&
      !memcmp(h.key, key, CACHE_KEY) && h.len == (uint64_t)st.st_size - sizeof h &&
      (p = malloc(h.len ? h.len : 1)) && read_all(fd, p, h.len) == 0 &&
      sha256(p, h.len, sum) == 0 && !memcmp(sum, h.sum, CACHE_KEY)) {
    close(fd);
    *kind = (int)h.kind;
    *len = h.len;
    return p;
  }
  free(p);
  close(fd);
  return NULL;
}

/* Whether name ends with suffix. */
static int ends_with(const char *name, const char *suffix)
{
  size_t n = strlen(name), k = strlen(suffix);
  return n >= k && !strcmp(name + n - k, suffix);
}

/* Removes the oldest files of dir while it holds more than CACHE_FILES,
 * and the temporary files older than TMP_AGE. */
static void cache_trim(const char *dir)
{
  DIR *d = opendir(dir);
  if (!d)
    return;
  time_t now = time(NULL);
  for (;;) {
    size_t n = 0;
    char oldest[NAME_MAX + 1] = "";
    struct timespec when = {0, 0};
    struct dirent *e;
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
      size_t len = strlen(e->d_name);
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      if (ends_with(e->d_name, TMP_SUFFIX) && now - st.st_mtim.tv_sec > TMP_AGE) {
        unlinkat(dirfd(d), e->d_name, 0);
        continue;
      }
      if (len != 2 * CACHE_KEY + strlen(SUFFIX) || !ends_with(e->d_name, SUFFIX))
        continue;
      n++;
      if (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
          (st.st_mtim.tv_sec == when.tv_sec && st.st_mtim.tv_nsec < when.tv_nsec)) {
        memcpy(oldest, e->d_name, len + 1);
        when = st.st_mtim;
      }
    }
    if (n <= CACHE_FILES || unlinkat(dirfd(d), oldest, 0) != 0)
      break;
  }
  closedir(d);
}

void cache_put(const unsigned char key[CACHE_KEY], int kind, const void *p, size_t len)
{
  char dir[4096], path[4200], tmp[4300];
  header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, CACHE_MAGIC, sizeof h.magic);
  memcpy(h.key, key, CACHE_KEY);
  h.len = len;
  h.kind = (uint64_t)kind;
  if (cache_dir(dir, sizeof dir) != 0 || cache_path(key, path, sizeof path) != 0 ||
      sha256(p, len, h.sum) != 0)
    return;
  /* The directory and the one above it (~/.cache may not exist yet). */
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    mkdir(dir, 0700);
    *slash = '/';
  }
  mkdir(dir, 0700);
  struct stat st;
  if (stat(dir, &st) != 0 || !own(&st))
    return; /* another's: its files would not be read */
  snprintf(tmp, sizeof tmp, "%s.%ld" TMP_SUFFIX, path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  int ok = write_all(fd, &h, sizeof h) == 0 && write_all(fd, p, len) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return;
  }
  cache_trim(dir);
}
