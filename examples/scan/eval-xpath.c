/* scan's xpath extractors and matchers: XPath 1.0 through libxml2 over
 * the text (the body, or its part), as nuclei runs them
 * (pkg/operators/extractors, matchers): a text that begins with "<?xml"
 * is read as XML (one that is not well-formed gives nothing), any other
 * as HTML, leniently, as a browser would. An extractor reports, per node
 * its expressions select, the node's text (its text descendants, an
 * attribute's value) or, with attribute:, the value of that attribute of
 * the node ("" when it has none); an expression whose value is no node
 * set, or that fails, gives none. A matcher's expression hits when it
 * selects a node; under and, one that selects none fails the matcher, one
 * that fails is passed over (nuclei's).
 *
 * libxml2 reads no DTD, no entity and nothing from the network here, and
 * stops an evaluation after XPATH_OPS steps, so that an expression that is
 * quadratic in a large page ends (it then selects nothing). */
#include "eval.h"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <string.h>

#define XPATH_OPS   10000000UL /* steps of one evaluation, at most */
#define XPATH_NODES 10000      /* nodes of one result looked at, at most */

static void quiet(void *ud, xmlErrorPtr e)
{
  (void)ud;
  (void)e;
}

static void silent(void *ud, const char *msg, ...)
{
  (void)ud;
  (void)msg;
}

/* The document text is, as nuclei reads it; NULL when none. */
static xmlDocPtr read_doc(rc_view text)
{
  if (!text.ptr || text.len > INT32_MAX)
    return NULL;
  xmlSetStructuredErrorFunc(NULL, quiet);
  xmlSetGenericErrorFunc(NULL, silent);
  if (text.len >= 5 && !memcmp(text.ptr, "<?xml", 5))
    return xmlReadMemory(text.ptr, (int)text.len, NULL, NULL,
                         XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  return htmlReadMemory(text.ptr, (int)text.len, NULL, "UTF-8",
                        HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR |
                            HTML_PARSE_NOWARNING);
}

/* The node set query q selects in the context's document; NULL when its
 * value is none (or no node set). */
static xmlXPathObjectPtr select_nodes(xmlXPathContextPtr ctx, const tpl_query *q)
{
  ctx->opCount = 0;
  xmlXPathObjectPtr r = xmlXPathCompiledEval(q->compiled, ctx);
  if (r && r->type != XPATH_NODESET) {
    xmlXPathFreeObject(r);
    r = NULL;
  }
  return r;
}

static xmlXPathContextPtr context(xmlDocPtr doc)
{
  xmlXPathContextPtr ctx = doc ? xmlXPathNewContext(doc) : NULL;
  if (ctx) {
    ctx->error = quiet;
    ctx->opLimit = XPATH_OPS;
  }
  return ctx;
}

/* A node's value for extractor e, added to x. */
static void node_value(const tpl_extractor *e, xmlNodePtr node, tpl_values *x)
{
  xmlChar *v = NULL;
  if (!e->attribute)
    v = xmlNodeGetContent(node);
  else if (node->type == XML_ELEMENT_NODE)
    v = xmlGetProp(node, (const xmlChar *)e->attribute);
  tpl_values_add(x, v ? (const char *)v : "", v ? strlen((const char *)v) : 0);
  xmlFree(v);
}

void xpath_extract(const tpl_extractor *e, rc_view text, tpl_values *x)
{
  xmlDocPtr doc = read_doc(text);
  xmlXPathContextPtr ctx = context(doc);
  for (size_t i = 0; ctx && i < e->n && x->n < EXTRACT_MAX; i++) {
    xmlXPathObjectPtr r = select_nodes(ctx, &e->queries[i]);
    xmlNodeSetPtr set = r ? r->nodesetval : NULL;
    for (int k = 0; set && k < set->nodeNr && k < XPATH_NODES && x->n < EXTRACT_MAX; k++)
      node_value(e, set->nodeTab[k], x);
    xmlXPathFreeObject(r);
  }
  if (doc && !ctx)
    x->nomem = 1;
  xmlXPathFreeContext(ctx);
  xmlFreeDoc(doc);
}

int xpath_match(const tpl_matcher *m, rc_view text)
{
  xmlDocPtr doc = read_doc(text);
  xmlXPathContextPtr ctx = context(doc);
  int hit = 0;
  for (size_t i = 0; ctx && i < m->n; i++) {
    ctx->opCount = 0;
    xmlXPathObjectPtr r = xmlXPathCompiledEval(m->xpath[i].compiled, ctx);
    int failed = !r,
        nodes = r && r->type == XPATH_NODESET && r->nodesetval && r->nodesetval->nodeNr > 0;
    xmlXPathFreeObject(r);
    if (failed)
      continue;
    if (!nodes && m->cond_and) {
      hit = 0;
      break;
    }
    hit |= nodes;
    if (nodes && !m->cond_and)
      break;
  }
  xmlXPathFreeContext(ctx);
  xmlFreeDoc(doc);
  return hit;
}
