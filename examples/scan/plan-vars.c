/* scan's values of a template for a target: the target variables
 * ({{BaseURL}} and the rest, of the target's URL), -var, the template's
 * constants and its variables, evaluated in order (tpl-vars.c says how
 * each is read). A variable that does not depend on the target is
 * evaluated once in a scan, when the plan is made (nuclei evaluates such
 * ones when it reads the template: a rand_base there is the same for every
 * target); the others once per target and template, when its job is made,
 * and kept with the job while its transfer and evaluation last. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* ---- The target's variables --------------------------------------------- */

/* The parts of a target URL that the variables name. */
typedef struct url_parts {
  char *scheme, *host, *port, *path;
} url_parts;

static int split_url(const char *target, url_parts *u)
{
  CURLU *h = curl_url();
  memset(u, 0, sizeof *u);
  int ok = h && curl_url_set(h, CURLUPART_URL, target, CURLU_DEFAULT_SCHEME) == CURLUE_OK &&
           curl_url_get(h, CURLUPART_SCHEME, &u->scheme, 0) == CURLUE_OK &&
           curl_url_get(h, CURLUPART_HOST, &u->host, 0) == CURLUE_OK &&
           curl_url_get(h, CURLUPART_PORT, &u->port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
           curl_url_get(h, CURLUPART_PATH, &u->path, 0) == CURLUE_OK;
  curl_url_cleanup(h);
  return ok ? 0 : -1;
}

static void free_parts(url_parts *u)
{
  curl_free(u->scheme);
  curl_free(u->host);
  curl_free(u->port);
  curl_free(u->path);
}

/* The value of target variable tpl_target_names[i] into l. */
static void target_value(line *l, const plan *p, size_t i, const char *target, const url_parts *u)
{
  const char *name = tpl_target_names[i];
  if (!strcmp(name, "randstr")) {
    puts_line(l, p->randstr);
    return;
  }
  size_t tlen = strlen(target);
  int std_port = (!strcmp(u->scheme, "http") && !strcmp(u->port, "80")) ||
                 (!strcmp(u->scheme, "https") && !strcmp(u->port, "443"));
  if (!strcmp(name, "BaseURL")) /* the target as given, without a final slash */
    put(l, target, tlen && target[tlen - 1] == '/' ? tlen - 1 : tlen);
  else if (!strcmp(name, "RootURL"))
    printf_line(l, "%s://%s%s%s", u->scheme, u->host, std_port ? "" : ":", std_port ? "" : u->port);
  else if (!strcmp(name, "Hostname"))
    printf_line(l, "%s%s%s", u->host, std_port ? "" : ":", std_port ? "" : u->port);
  else if (!strcmp(name, "Host"))
    puts_line(l, u->host);
  else if (!strcmp(name, "Port"))
    puts_line(l, u->port);
  else if (!strcmp(name, "Path"))
    puts_line(l, strcmp(u->path, "/") ? u->path : "");
  else if (!strcmp(name, "Scheme"))
    puts_line(l, u->scheme);
}

/* ---- A target's own values --------------------------------------------- */

/* The values of tpl_target_names for one target URL (randstr's the
 * scan's): the same for every template, made once per target and shared,
 * counted in refs, by p->here (the target the jobs are made for) and the
 * plan_vals of its jobs. The last to drop them frees them. */
struct plan_here {
  size_t refs;
  char *target; /* NULL: none (randstr alone) */
  plan_value v[PLAN_TARGET_MAX];
};

static void set(plan_value *v, line *l)
{
  v->p = l->p;
  v->len = l->len;
}

static void here_drop(plan_here *h)
{
  if (!h || --h->refs)
    return;
  for (size_t i = 0; i < PLAN_TARGET_MAX; i++)
    free(h->v[i].p);
  free(h->target);
  free(h);
}

/* target's own values, new into *out (refs 1): 0, -1 when out of memory,
 * -2 when target is not a URL curl can parse. */
static int here_make(const plan *p, const char *target, plan_here **out)
{
  url_parts u;
  plan_here *h = calloc(1, sizeof *h);
  *out = NULL;
  if (!h)
    return -1;
  h->refs = 1;
  if (target && split_url(target, &u) != 0) {
    free_parts(&u);
    free(h);
    return -2;
  }
  int ok = !target || (h->target = strdup(target)) != NULL;
  for (size_t i = 0; ok && i < tpl_ntarget_names && i < PLAN_TARGET_MAX; i++) {
    if (!target && strcmp(tpl_target_names[i], "randstr"))
      continue;
    line l = {0};
    target_value(&l, p, i, target ? target : "", &u);
    put(&l, "", 1);
    ok = !l.nomem;
    if (ok) {
      l.len--;
      set(&h->v[i], &l);
    } else {
      free(l.p);
    }
  }
  if (target)
    free_parts(&u);
  if (!ok) {
    here_drop(h);
    return -1;
  }
  *out = h;
  return 0;
}

/* Whether h holds target's values. */
static int here_is(const plan_here *h, const char *target)
{
  return h && (h->target && target ? !strcmp(h->target, target) : h->target == target);
}

int plan_here_take(plan *p, const char *target)
{
  plan_here *h;
  if (here_is(p->here, target))
    return 0;
  int rc = here_make(p, target, &h);
  if (rc == 0) {
    here_drop(p->here);
    p->here = h;
  }
  return rc;
}

void plan_here_free(plan *p)
{
  here_drop(p->here);
  p->here = NULL;
}

/* ---- Values ------------------------------------------------------------- */

int plan_vals_lookup(void *ud, const char *name, size_t len, expr_value *out)
{
  const plan_vals *v = ud;
  const tpl *t = &v->p->ts->t[v->tpl];
  const plan_value *val;
  size_t i;
  switch (tpl_name(t, v->p->ts->given, v->p->ts->ngiven, name, len, &i)) {
  case TS_CONST: *out = expr_str(t->consts[i].value, strlen(t->consts[i].value)); return 1;
  case TS_GIVEN: *out = expr_str(v->p->ts->given[i] + len + 1, strlen(v->p->ts->given[i] + len + 1)); return 1;
  case TS_TARGET:
    if (!v->here || !v->here->v[i].p)
      return 0;
    *out = expr_str(v->here->v[i].p, v->here->v[i].len);
    return 1;
  case TS_VAR:
    if (i >= v->known)
      return 0;
    val = v->vars[i].p ? &v->vars[i] : v->p->fixed[v->tpl] ? &v->p->fixed[v->tpl][i] : NULL;
    if (!val || !val->p)
      return 0; /* not evaluated: of the target, where there is none */
    *out = expr_str(val->p, val->len);
    return 1;
  case TS_DYNAMIC: return v->seq && plan_seq_value(v->seq, v->p, name, len, out);
  case TS_PAYLOAD: /* a value of the request's combination: a sequence's */
    return v->seq && plan_seq_payload(v->seq, v->p, name, len, out);
  case TS_NONE: break;
  }
  return 0;
}

expr_code plan_render(const plan_vals *v, const char *text, line *out, expr_error *err)
{
  expr_env env;
  expr_env_init(&env);
  env.lookup = plan_vals_lookup;
  env.ud = (void *)v;
  expr_arena a;
  expr_arena_init(&a, 0);
  expr_error local;
  expr_code rc = tpl_render(&v->p->ts->t[v->tpl], text, &env, &a, out, err ? err : &local);
  expr_arena_free(&a);
  return rc;
}

/* Variable i of template t's value with v (whose first i are known), into
 * *out: its text rendered, or as written when that fails (nuclei keeps
 * the text of a variable it cannot evaluate). 0, or -1 when out of memory. */
static int evaluate(const plan_vals *v, size_t i, plan_value *out)
{
  const tpl *t = &v->p->ts->t[v->tpl];
  line l = {0};
  expr_code rc = plan_render(v, t->vars[i].value, &l, NULL);
  if (rc != EXPR_OK && rc != EXPR_E_NOMEM) {
    l.len = 0;
    l.nomem = 0;
    puts_line(&l, t->vars[i].value);
  }
  put(&l, "", 1);
  if (l.nomem) {
    free(l.p);
    return -1;
  }
  l.len--;
  set(out, &l);
  return 0;
}

/* Whether variable i of t is the one its name gives (no constant, -var or
 * target variable of that name). */
static int own(const plan *p, const tpl *t, size_t i)
{
  size_t j;
  return tpl_name(t, p->ts->given, p->ts->ngiven, t->vars[i].name, strlen(t->vars[i].name),
                  &j) == TS_VAR;
}

int plan_vals_eval(plan_vals *v, const plan *p, size_t t, const char *target, int all)
{
  const tpl *tp = &p->ts->t[t];
  memset(v, 0, sizeof *v);
  v->p = p;
  v->tpl = t;
  if (here_is(p->here, target)) { /* the target's, shared */
    v->here = p->here;
    v->here->refs++;
  } else {
    int rc = here_make(p, target, &v->here);
    if (rc != 0)
      return rc;
  }
  int ok = !(all && tp->nvars && !(v->vars = calloc(tp->nvars, sizeof *v->vars)));
  for (size_t i = 0; all && ok && i < tp->nvars; i++, v->known = i)
    if (own(p, tp, i) && (tp->vars[i].per_target || !p->fixed[t]))
      ok = evaluate(v, i, &v->vars[i]) == 0;
  return ok ? 0 : -1;
}

void plan_vals_free(plan_vals *v)
{
  here_drop(v->here);
  const tpl *t = v->p ? &v->p->ts->t[v->tpl] : NULL;
  for (size_t i = 0; v->vars && i < t->nvars; i++)
    free(v->vars[i].p);
  free(v->vars);
  memset(v, 0, sizeof *v);
}

/* ---- Once in a scan ----------------------------------------------------- */

int plan_fix(plan *p)
{
  const templates *ts = p->ts;
  if (!(p->fixed = calloc(ts->n + 1, sizeof *p->fixed)))
    return -1;
  for (size_t t = 0; t < ts->n; t++) {
    const tpl *tp = &ts->t[t];
    if (!tp->nvars)
      continue;
    plan_value *f = calloc(tp->nvars, sizeof *f);
    if (!f)
      return -1;
    plan_vals v;
    if (plan_vals_eval(&v, p, t, NULL, 0) != 0) {
      free(f);
      plan_vals_free(&v);
      return -1;
    }
    v.vars = f; /* the fixed ones, in order: each may use those before it */
    int ok = 1;
    for (size_t i = 0; ok && i < tp->nvars; v.known = ++i)
      if (own(p, tp, i) && !tp->vars[i].per_target)
        ok = evaluate(&v, i, &f[i]) == 0;
    v.vars = NULL;
    plan_vals_free(&v);
    p->fixed[t] = f;
    if (!ok)
      return -1;
  }
  return 0;
}

void plan_unfix(plan *p)
{
  for (size_t t = 0; p->fixed && t < p->ts->n; t++) {
    for (size_t i = 0; p->fixed[t] && i < p->ts->t[t].nvars; i++)
      free(p->fixed[t][i].p);
    free(p->fixed[t]);
  }
  free(p->fixed);
  p->fixed = NULL;
}
