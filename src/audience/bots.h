/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bots: which user agents are robots (invalid traffic, docs/AUDIENCE.md): a built-in list of
 * self-declared bots, crawlers, spiders and monitors, and the station's own list
 * (<audience><bots>) in the format of the IAB/ABC International Spiders & Bots List, one
 * entry a line:
 *   pattern|active|exceptions|two-pass|impact|start-of-string[|inactive date]
 * pattern: text the agent holds (any case); active: 1, or 0 (the line is skipped);
 * exceptions: ", "-separated texts that, when the agent holds one, make it no robot (the
 * whitelist); start-of-string: 1 when the pattern must begin the agent. The two-pass and
 * impact flags and the date are read and not used; a line without "|" is an active pattern
 * matched anywhere; "#" lines and blank ones are comments. The session classifier
 * (stream/session.h) once loaded.
 */
#ifndef RIMECAST_BOTS_H
#define RIMECAST_BOTS_H

#include <stddef.h>

typedef struct bots bots_t;

/* The list in text (len bytes); *bad: its malformed lines (skipped). NULL without memory. */
bots_t *bots_parse(const char *text, size_t len, size_t *bad);
/* How many active entries it holds. */
size_t bots_count(const bots_t *b);
/* 1 when agent matches an active entry and none of its exceptions. */
int bots_match(const bots_t *b, const char *agent);
void bots_free(bots_t *b);

/* The built-in list, parsed once (never freed); its text for the docs and tests. */
const bots_t *bots_builtin(void);
extern const char bots_builtin_text[];

/* Reads <bots> (again, on reload) and registers the classifier; the error log says how many
 * entries it read, or why it could not (then the built-in list alone is used). Main thread. */
void bots_load(void);
/* SESSION_INVALID_BOT when agent is a robot by either list, else "". Any thread. */
const char *bots_classify(const char *agent);

#endif
