/* scan's main: the command line (main-opts.c), then with -t the templates
 * loaded (tpl.h), planned (plan.h) and made the scan's matchers (eval.h),
 * then the scan (loop.h). loop-run.c tells how the scan is put together;
 * base.h lists the layers. */
#include "main.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* nuclei's -fr, -fhr and -dr: the redirects every template request
 * follows, -fr's and -fhr's limit -L (nuclei's -mr). */
static void redirect_flags(templates *ts, const options *o)
{
  for (size_t i = 0; o->redirects && i < ts->n; i++)
    for (size_t k = 0; k < ts->t[i].nreqs; k++) {
      tpl_request *q = &ts->t[i].reqs[k];
      q->redirects = o->redirects == REDIRECTS_NONE ? 0 : o->redirects;
      if (o->redirects != REDIRECTS_NONE && o->max_redirs > 0)
        q->max_redirs = o->max_redirs;
    }
}

/* -t: loads the templates into ts, plans their requests into p and makes
 * their matchers of the body the scan's, m. Returns -1 to go on, else the
 * exit status (--validate, or a failure). */
static int load_templates(scan *s, templates *ts, plan *p, matchers *m)
{
  const options *o = s->opt;
  if (!o->ntemplates)
    return -1;
  ts->given = o->vars;
  ts->ngiven = o->nvars;
  ts->attack = o->attack;
  ts->run_payloads = 1; /* each combination is sent, in a sequence (plan-sequence.c) */
  ts->filter = tpl_filter_any(&o->filter) ? &o->filter : NULL;
  if (tpl_load(ts, o->templates, o->ntemplates) != 0)
    return EXIT_SETUP;
  redirect_flags(ts, o);
  p->payload_concurrency = o->payload_concurrency;
  if (plan_build(p, ts) != 0 || plan_words(p, ts) != 0 || eval_matchers(ts, &o->m, m) != 0) {
    fputs("scan: out of memory\n", stderr);
    return EXIT_SETUP;
  }
  if (o->validate) {
    out_validation(ts, p, o->verbose);
    return EXIT_RAN;
  }
  s->tpl = ts;
  s->plan = p;
  s->m = m; /* the templates' matchers of the body, as the scan's */
  return -1;
}

int main(int argc, char **argv)
{
  options opt;
  int status = parse_options(argc, argv, &opt);
  if (status >= 0) {
    options_free(&opt);
    return status;
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fputs("scan: curl_global_init failed\n", stderr);
    options_free(&opt);
    return EXIT_SETUP;
  }
  scan s;
  memset(&s, 0, sizeof s);
  s.opt = &opt;
  s.m = &opt.m;
  s.out.fd = -1;
  s.progress = !opt.silent && !opt.stats && isatty(STDERR_FILENO);
  templates ts;
  plan p;
  matchers tm;
  memset(&ts, 0, sizeof ts);
  memset(&p, 0, sizeof p);
  memset(&tm, 0, sizeof tm);
  if ((status = load_templates(&s, &ts, &p, &tm)) < 0)
    status = scan_setup(&s) == 0 ? scan_all(&s) : EXIT_SETUP;
  if (s.out.fd > STDOUT_FILENO && close(s.out.fd) != 0 && status == EXIT_RAN) {
    fprintf(stderr, "scan: writing results failed: %s\n", strerror(errno));
    status = EXIT_SETUP;
  }
  scan_teardown(&s);
  eval_matchers_free(&tm);
  plan_free(&p);
  tpl_free(&ts);
  curl_global_cleanup();
  options_free(&opt);
  return status;
}
