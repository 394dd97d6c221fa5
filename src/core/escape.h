/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * escape: the one escaping helper per output language. Everything a client sends is untrusted:
 * it leaves the server only through escape_xml (HTML and XML), escape_json, or escape_log.
 * All three are rule tables over one walker (escape.c), so what is escaped, dropped or replaced
 * is decided in one place. Input is (pointer, length) and never read past. Stateless.
 */
#ifndef RIMECAST_ESCAPE_H
#define RIMECAST_ESCAPE_H

#include <stddef.h>

#include "core/buf.h"

/* & < > " ' -> entities; bytes < 0x20 other than \t \n \r are dropped (not valid in XML 1.0);
 * U+FFFE, U+FFFF and invalid UTF-8 sequences become U+FFFD (one per invalid byte).
 * Returns a malloc'd NUL-terminated string (caller frees) or NULL on ENOMEM. */
char *escape_xml(const char *s, size_t len);

/* JSON string body (no surrounding quotes): \" \\ \b \f \n \r \t; other < 0x20, 0x7f, U+2028
 * and U+2029 as \u00XX / \u2028; "</" as "<\/"; invalid UTF-8 becomes U+FFFD.
 * Returns a malloc'd NUL-terminated string (caller frees) or NULL on ENOMEM. */
char *escape_json(const char *s, size_t len);

/* Appends what escape_json returns to b, surrounded by double quotes when quoted is non-zero.
 * 0, or b's sticky error (-ENOMEM). */
int escape_json_buf(buf_t *b, const char *s, size_t len, int quoted);

/* Appends s as a field of tab-separated values: backslash, tab, newline and CR as \\, \t, \n
 * and \r; NULL (no value) as \N. 0, or -ENOMEM (b->error set). */
int escape_tsv_buf(buf_t *b, const char *s);

/* For log lines: printable ASCII kept except '\\' and '"' which become \\ and \";
 * every other byte (CR, LF, control, >= 0x80) becomes \xHH. Writes at most outlen-1 bytes plus
 * NUL into out, never splitting an escape; returns out (untouched when outlen is 0). */
char *escape_log(char *out, size_t outlen, const char *s, size_t len);

/* The same for text that should stay readable (the playlist log, whose fields are separated by
 * '|'): valid UTF-8 characters from U+00A0 up and '"' are kept; invalid bytes become \xHH. */
char *escape_log_utf8(char *out, size_t outlen, const char *s, size_t len);

#endif
