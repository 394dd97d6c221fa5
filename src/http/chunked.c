/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * chunked: the chunked transfer-coding decoder (see chunked.h), one state per place in the
 * grammar:  chunk = size [ext] CRLF data CRLF;  last = "0" [ext] CRLF *(trailer CRLF) CRLF.
 */
#include "http/chunked.h"

#include <string.h>

enum {
    ST_SIZE,        /* hex digits of a chunk size */
    ST_EXT,         /* after the size: whitespace and extensions up to CR */
    ST_SIZE_LF,     /* LF ending the size line */
    ST_DATA,        /* chunk data */
    ST_DATA_CR,     /* CRLF after the data */
    ST_DATA_LF,
    ST_TRAILER_START, /* at the start of a trailer line or of the final CRLF */
    ST_TRAILER,
    ST_TRAILER_LF,
    ST_END_LF,      /* LF of the final CRLF */
    ST_DONE,
    ST_ERROR,
};

void chunked_init(chunked_t *d)
{
    memset(d, 0, sizeof(*d));
    d->state = ST_SIZE;
}

int chunked_done(const chunked_t *d)
{
    return d->state == ST_DONE;
}

const char *chunked_strerror(int err)
{
    switch (err) {
    case CHUNKED_ERR_SYNTAX:
        return "bad chunked framing";
    case CHUNKED_ERR_TOO_LONG:
        return "chunk-size or trailer line too long";
    case CHUNKED_ERR_OVERFLOW:
        return "chunk too large";
    default:
        return "chunked decoding error";
    }
}

static int hex_value(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* One byte of a size, extension or trailer line: 0, or an error. */
static int line_byte(chunked_t *d, unsigned char ch)
{
    if (ch != '\r' && ++d->line_len > CHUNKED_MAX_LINE)
        return CHUNKED_ERR_TOO_LONG;
    switch (d->state) {
    case ST_SIZE: {
        int v = hex_value(ch);
        if (v >= 0) {
            if (d->remaining > (CHUNKED_MAX_CHUNK - (uint64_t)v) / 16)
                return CHUNKED_ERR_OVERFLOW;
            d->remaining = d->remaining * 16 + (uint64_t)v;
            d->digits++;
            return 0;
        }
        if (!d->digits)
            return CHUNKED_ERR_SYNTAX;
        if (ch == '\r')
            d->state = ST_SIZE_LF;
        else if (ch == ';' || ch == ' ' || ch == '\t')
            d->state = ST_EXT;
        else
            return CHUNKED_ERR_SYNTAX;
        return 0;
    }
    case ST_EXT:
        if (ch == '\r')
            d->state = ST_SIZE_LF;
        else if (ch == '\n')
            return CHUNKED_ERR_SYNTAX;
        return 0;
    case ST_TRAILER_START:
    case ST_TRAILER:
        if (ch == '\r')
            d->state = d->state == ST_TRAILER_START ? ST_END_LF : ST_TRAILER_LF;
        else if (ch == '\n')
            return CHUNKED_ERR_SYNTAX;
        else
            d->state = ST_TRAILER;
        return 0;
    }
    return CHUNKED_ERR_SYNTAX;
}

/* The LF after a CR: 0 or an error. */
static int line_end(chunked_t *d, unsigned char ch)
{
    if (ch != '\n')
        return CHUNKED_ERR_SYNTAX;
    d->line_len = 0;
    switch (d->state) {
    case ST_SIZE_LF:
        d->state = d->remaining ? ST_DATA : ST_TRAILER_START;
        break;
    case ST_DATA_LF:
        d->state = ST_SIZE;
        d->remaining = 0;
        d->digits = 0;
        break;
    case ST_TRAILER_LF:
        d->state = ST_TRAILER_START;
        break;
    case ST_END_LF:
        d->state = ST_DONE;
        break;
    }
    return 0;
}

ssize_t chunked_decode(chunked_t *d, unsigned char *buf, size_t len, size_t *used)
{
    size_t in = 0, out = 0;
    int err = 0;
    while (in < len && !err && d->state != ST_DONE && d->state != ST_ERROR) {
        unsigned char ch = buf[in];
        switch (d->state) {
        case ST_DATA: {
            size_t n = len - in;
            if (n > d->remaining)
                n = (size_t)d->remaining;
            memmove(buf + out, buf + in, n);
            out += n;
            in += n;
            d->remaining -= n;
            if (!d->remaining)
                d->state = ST_DATA_CR;
            continue;
        }
        case ST_DATA_CR:
            if (ch == '\r')
                d->state = ST_DATA_LF;
            else
                err = CHUNKED_ERR_SYNTAX;
            break;
        case ST_SIZE_LF:
        case ST_DATA_LF:
        case ST_TRAILER_LF:
        case ST_END_LF:
            err = line_end(d, ch);
            break;
        default:
            err = line_byte(d, ch);
            break;
        }
        in++;
    }
    if (used)
        *used = in;
    if (err) {
        d->state = ST_ERROR;
        d->remaining = (uint64_t)-err;
        return err;
    }
    if (d->state == ST_ERROR)
        return -(ssize_t)d->remaining;
    return (ssize_t)out;
}
