/* The DSL's random values: rand_base(length, [charset]),
 * rand_char([charset]) (letters and digits unless a charset that is not
 * blank is given), rand_text_alpha, rand_text_alphanumeric and
 * rand_text_numeric(length, [bad characters left out]), rand_int([min,
 * [max]]) in [min, max) (0 and 2^31-1 by default), and rand_ip(cidr...),
 * an address in one of the networks. Bits come from env.random, or else
 * getrandom(2). Lengths are capped as every value is (env.max_len). */
#define _DEFAULT_SOURCE
#include "expr-int.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define S(v) (v).u.str.ptr, (v).u.str.len

static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
static const char digits[] = "1234567890";
static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890";

typedef struct rng {
  expr_ctx *c;
  uint64_t buf[32];
  size_t left;
} rng;

static uint64_t bits64(rng *r)
{
  const expr_env *env = r->c->env;
  if (env->random)
    return env->random(env->ud);
  if (r->left == 0) {
    size_t got = 0;
    while (got < sizeof r->buf) {
      ssize_t k = getrandom((char *)r->buf + got, sizeof r->buf - got, 0);
      if (k > 0)
        got += (size_t)k;
    }
    r->left = sizeof r->buf / sizeof r->buf[0];
  }
  return r->buf[--r->left];
}

/* Uniform in [0, n), n > 0. */
static uint64_t below(rng *r, uint64_t n)
{
  uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
  do
    x = bits64(r);
  while (x >= lim);
  return x % n;
}

static expr_code rand_seq(expr_ctx *c, const char *set, size_t setn, long long len,
                          expr_value *out)
{
  if (len < 0)
    return expr__fail(c, EXPR_E_VALUE, "negative length");
  if (len > 0 && setn == 0)
    return expr__fail(c, EXPR_E_VALUE, "no characters to choose from");
  if ((unsigned long long)len > c->max_len)
    return expr__fail(c, EXPR_E_LIMIT, "a value would pass %zu bytes", c->max_len);
  char *p = expr__alloc(c, (size_t)len);
  if (!p)
    return c->err->code;
  rng r = {.c = c};
  for (long long i = 0; i < len; i++)
    p[i] = set[below(&r, setn)];
  *out = expr_str(p, (size_t)len);
  return EXPR_OK;
}

static int blank(const expr_value *s)
{
  for (size_t i = 0; i < s->u.str.len; i++)
    if (!strchr(" \t\n\v\f\r", s->u.str.ptr[i]) || !s->u.str.ptr[i])
      return 0;
  return 1;
}

static expr_code fn_rand_base(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  long long len;
  expr_value set = expr_str(letters, 52);
  if (!expr__to_int(&a[0], &len))
    return expr__fail(c, EXPR_E_VALUE, "rand_base: bad length");
  if (n == 2) {
    expr_code rc = expr__str(c, &a[1], &set);
    if (rc != EXPR_OK)
      return rc;
  }
  if (n != 2 || blank(&set)) {
    set = expr_str(alnum, sizeof alnum - 1);
  }
  return rand_seq(c, S(set), len, out);
}

static expr_code fn_rand_char(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  expr_value one = expr_num(1);
  expr_value args[2] = {one, n ? a[0] : expr_str("", 0)};
  return fn_rand_base(c, args, 2, out);
}

/* rand_text_*: the characters of sets[mode] without the bytes of the
 * optional second argument. */
static const char *const sets[] = {letters, alnum, digits};

static expr_code fn_rand_text(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  const char *base = sets[expr__mode(c)];
  long long len;
  expr_value bad = expr_str("", 0);
  if (!expr__to_int(&a[0], &len))
    return expr__fail(c, EXPR_E_VALUE, "bad length");
  if (n == 2) {
    expr_code rc = expr__str(c, &a[1], &bad);
    if (rc != EXPR_OK)
      return rc;
  }
  char set[64];
  size_t k = 0;
  for (const char *p = base; *p; p++)
    if (!bad.u.str.len || !memchr(bad.u.str.ptr, *p, bad.u.str.len))
      set[k++] = *p;
  return rand_seq(c, set, k, len, out);
}


static expr_code fn_rand_int(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  long long min = 0, max = 2147483647;
  if ((n > 0 && !expr__to_int(&a[0], &min)) || (n > 1 && !expr__to_int(&a[1], &max)))
    return expr__fail(c, EXPR_E_VALUE, "rand_int: bad bound");
  if (max <= min || (min < 0 && max > INT64_MAX + min))
    return expr__fail(c, EXPR_E_VALUE, "rand_int: empty range");
  rng r = {.c = c};
  *out = expr_num((double)(min + (long long)below(&r, (uint64_t)(max - min))));
  return EXPR_OK;
}

/* A random address in the network text[0..n) (a.b.c.d/len or v6/len). */
static expr_code rand_in(expr_ctx *c, const expr_value *cidr, expr_value *out)
{
  char buf[64];
  unsigned char addr[16];
  size_t n = cidr->u.str.len;
  const char *slash = n < sizeof buf ? memchr(cidr->u.str.ptr, '/', n) : NULL;
  if (!slash)
    return expr__fail(c, EXPR_E_VALUE, "rand_ip: not a network");
  memcpy(buf, cidr->u.str.ptr, (size_t)(slash - cidr->u.str.ptr));
  buf[slash - cidr->u.str.ptr] = '\0';
  int v6 = strchr(buf, ':') != NULL, bits = v6 ? 128 : 32;
  char *end;
  long plen = strtol(slash + 1, &end, 10);
  if (inet_pton(v6 ? AF_INET6 : AF_INET, buf, addr) != 1 || slash + 1 == cidr->u.str.ptr + n ||
      end != cidr->u.str.ptr + n || plen < 0 || plen > bits)
    return expr__fail(c, EXPR_E_VALUE, "rand_ip: not a network");
  rng r = {.c = c};
  for (int i = (int)plen; i < bits; i++) {
    unsigned char m = (unsigned char)(0x80 >> (i % 8));
    addr[i / 8] = (unsigned char)((addr[i / 8] & ~m) | (below(&r, 2) ? m : 0));
  }
  char text[INET6_ADDRSTRLEN];
  inet_ntop(v6 ? AF_INET6 : AF_INET, addr, text, sizeof text);
  return expr__copy(c, text, strlen(text), out);
}

static expr_code fn_rand_ip(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  rng r = {.c = c};
  expr_value s;
  expr_code rc = expr__str(c, &a[below(&r, n)], &s);
  return rc == EXPR_OK ? rand_in(c, &s, out) : rc;
}

const expr_fn expr__fn_random[] = {
    {"rand_base", 1, 3, fn_rand_base, 0},
    {"rand_char", 0, 1, fn_rand_char, 0},
    {"rand_text_alpha", 1, 2, fn_rand_text, 0},
    {"rand_text_alphanumeric", 1, 2, fn_rand_text, 1},
    {"rand_text_numeric", 1, 2, fn_rand_text, 2},
    {"rand_int", 0, 2, fn_rand_int, 0},
    {"rand_ip", 1, -1, fn_rand_ip, 0},
    {NULL, 0, 0, NULL, 0},
};
