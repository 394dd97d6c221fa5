/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * walk: internal to src/conf. The engine that applies tables of directives to icecast.xml
 * elements (walk.c): the directive and section types, the parser state, reading element text
 * and attributes, typed setters, the table walker, "file:line:" messages; and the policy for
 * settings not implemented yet (policy.c: refuse or warn), which the walker consults. The
 * vocabulary (directives.h) and the loader (config.c) are built on it; it includes neither.
 * Nothing outside src/conf includes this, except the unit tests.
 */
#ifndef RIMECAST_CONF_WALK_H
#define RIMECAST_CONF_WALK_H

#include <libxml/tree.h>
#include <stddef.h>

#include "conf/snapshot.h"

typedef enum {
    D_STR,     /* text kept as written; empty is an error unless F_EMPTY_OK */
    D_PATH,    /* text, surrounding blanks trimmed, never empty */
    D_MOUNT,   /* like D_PATH and must start with '/' */
    D_INT,     /* int within [min, max]; words (if any) are accepted too */
    D_LONG,    /* long within [min, max] (byte sizes) */
    D_BOOL,    /* int with the boolean words; [min, max] is 0..1 (-1..1 for tri-state) */
    D_SECTION, /* nested block walked with `sub` on the same object */
    D_FN,      /* handler */
    D_IGNORE,  /* accepted and dropped */
} dtype_t;

#define F_EMPTY_OK 1u   /* free text that may be empty */
#define F_DEPRECATED 2u /* warn once with `note` */
#define F_DEFAULT 4u    /* `def` (numbers) or `sdef` (text) is the value until the file sets one */
#define F_BITRATE 8u    /* a number of bits/s, "k" or "m" after it (x 1000, x 1000000; as
                         * Icecast-KH reads <limit-rate>) */

typedef struct parse parse_t;
typedef struct section section_t;
typedef int (*dir_fn)(parse_t *p, xmlNodePtr n, void *obj);

typedef struct word {
    const char *text;
    int value;
} word_t;

typedef struct directive {
    const char *name;
    dtype_t type;
    size_t off;         /* offsetof the field in the section's object */
    long min, max;      /* numeric bounds */
    const word_t *words; /* named values of a number, NULL-terminated */
    const section_t *sub;
    dir_fn fn;
    unsigned flags;
    const char *note;   /* deprecation advice */
    long def;           /* F_DEFAULT: a number's default */
    const char *sdef;   /* F_DEFAULT: a text's default */
} directive_t;

struct section {
    const char *name;          /* in messages: "unknown element <x> in <name>" */
    const directive_t *dirs;   /* ends with a row whose name is NULL */
};

typedef struct warned warned_t;

struct parse {
    config_t *c;
    const char *name;   /* file name in messages */
    char *err;
    size_t errlen;
    config_warn_fn warn;
    warned_t *warned;   /* keys already warned about */
    int root_port;      /* legacy <port> at root level, 0 = none */
    long root_port_line;
    char *root_bind;    /* legacy <bind-address> at root level */
};

extern const word_t config_bool_words[];

/* Engine (walk.c). Every function returning int returns 0 or -1 with p->err set. */
long config_line(xmlNodePtr n);
int config_err(parse_t *p, xmlNodePtr n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Warns about setting (an element name) through the callback and keeps the warning in the
 * config's list, at most once per key (NULL key: every time). */
void config_warn_at(parse_t *p, const char *setting, const char *key, long line,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A value made safe to quote in a message (<= 40 bytes, control bytes as '?'). */
const char *config_shown(const char *v, char *buf, size_t len);
/* Attribute value, trimmed and malloc'd; *out NULL when absent. */
int config_attr(parse_t *p, xmlNodePtr n, const char *name, char **out);
/* Same, and an absent or empty attribute is an error. */
int config_attr_required(parse_t *p, xmlNodePtr n, const char *name, char **out);
/* Parses v as d's number (words, then decimal within bounds). */
int config_number(parse_t *p, xmlNodePtr n, const directive_t *d, const char *v, long *out);
/* Stores the text of n into obj + d->off according to d->type. */
int config_set_value(parse_t *p, xmlNodePtr n, const directive_t *d, void *obj);
/* Applies every child element of parent through the table of sec. */
int config_walk(parse_t *p, xmlNodePtr parent, const section_t *sec, void *obj);
/* The defaults of sec's rows (and of its nested sections) into obj: numbers set, texts copied
 * where still NULL. 0, or -1 when out of memory. */
int config_set_defaults(const section_t *sec, void *obj);
/* Frees the text fields of sec's rows (and of its nested sections) in obj and clears them. */
void config_free_fields(const section_t *sec, void *obj);

/* Frees the keys warned about (p->warned) once a file is done with. */
void config_forget_warned(parse_t *p);

/* Policy (policy.c): what happens to a setting the server does not implement yet. */
typedef enum {
    POLICY_REFUSE = 1, /* ignoring it would open access: the file is refused */
    POLICY_WARN,       /* ignoring it changes no access rule: one warning at start-up */
} policy_action_t;

typedef enum {
    POLICY_PRESENT, /* whatever the value */
    POLICY_ENABLED, /* only when the value is not 0 (the default, which is what happens) */
} policy_when_t;

typedef struct policy {
    const char *section;   /* the enclosing element, as in section_t.name ("mount") */
    const char *element;   /* "authentication" */
    const char *attribute; /* NULL, or an attribute of element that is not implemented */
    policy_action_t action;
    policy_when_t when;
    const char *why;       /* what the server does instead, for the message */
} policy_t;

/* The table; ends with a row whose element is NULL. Implementing a setting = deleting its row. */
extern const policy_t config_policies[];

/* The row for this element (attribute NULL) or attribute in section, else NULL. */
const policy_t *config_policy_find(const char *section, const char *element,
                                   const char *attribute);
/* Applies the row for element/attribute of node n in section, if any: enabled says whether the
 * value asks for the feature (non-zero number, any text). Returns -1 with p->err set when the
 * setting is refused, else 0 (after warning once when the row says so). */
int config_policy_apply(parse_t *p, xmlNodePtr n, const char *section, const char *attribute,
                        int enabled);

#endif
