/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_escape: pins down the escapers, what leaves the server as XML/HTML, JSON or a log line:
 * markup and quotes, control characters, invalid UTF-8, and truncation of log escapes.
 */
#include "core/escape.h"

#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static char *xml(const char *s)
{
    return escape_xml(s, strlen(s));
}

static char *json(const char *s)
{
    return escape_json(s, strlen(s));
}

static void xml_escapes_markup_and_drops_controls(void)
{
    CHECK_OWNED(xml("<script>alert('x')</script>"),
                "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
    CHECK_OWNED(xml("a & b \"q\""), "a &amp; b &quot;q&quot;");
    CHECK_OWNED(xml("line1\r\nline2\tend"), "line1\r\nline2\tend");
    CHECK_OWNED(xml("a\x01\x02\x1b[31mb\x0c"), "a[31mb");
    CHECK_OWNED(xml("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xb5"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xb5");
    CHECK_OWNED(xml("bad\xff\xfe!"), "bad\xef\xbf\xbd\xef\xbf\xbd!");
    CHECK_OWNED(xml("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");              /* overlong '/' */
    CHECK_OWNED(xml("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* surrogate */
    CHECK_OWNED(xml("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");              /* truncated */
    CHECK_OWNED(xml("\xef\xbf\xbe"), "\xef\xbf\xbd");                       /* U+FFFE */
    CHECK_OWNED(xml("]]>"), "]]&gt;");
    CHECK_OWNED(escape_xml("a\0b", 3), "ab");
    CHECK_OWNED(escape_xml(NULL, 0), "");
}

static void json_escapes_quotes_controls_and_script_end(void)
{
    CHECK_OWNED(json("say \"hi\" \\ now"), "say \\\"hi\\\" \\\\ now");
    CHECK_OWNED(json("\b\f\n\r\t"), "\\b\\f\\n\\r\\t");
    CHECK_OWNED(json("\x01\x1f\x7f"), "\\u0001\\u001f\\u007f");
    CHECK_OWNED(escape_json("\0", 1), "\\u0000");
    CHECK_OWNED(json("</script><script>"), "<\\/script><script>");
    CHECK_OWNED(json("a/b"), "a/b");
    CHECK_OWNED(json("x\xff"), "x\xef\xbf\xbd");
    CHECK_OWNED(json("\xe2\x80\xa8"), "\\u2028");
    CHECK_OWNED(json("\xc3\xa9"), "\xc3\xa9");
}

static void log_escape_never_emits_controls(void)
{
    char out[64];
    CHECK_STR(escape_log(out, sizeof(out), "GET /a\r\nX: y", 12), "GET /a\\x0D\\x0AX: y");
    CHECK_STR(escape_log(out, sizeof(out), "a\"b\\c", 5), "a\\\"b\\\\c");
    CHECK_STR(escape_log(out, sizeof(out), "%s%n\x1b\xff", 6), "%s%n\\x1B\\xFF");
    CHECK_STR(escape_log(out, sizeof(out), "\0", 1), "\\x00");
    /* truncation never splits an escape */
    CHECK_STR(escape_log(out, 6, "ab\ncd", 5), "ab");
    CHECK_STR(escape_log(out, 7, "ab\ncd", 5), "ab\\x0A");
    CHECK_STR(escape_log(out, 4, "a\"b", 3), "a\\\"");
    CHECK_STR(escape_log(out, 3, "a\"b", 3), "a");
    CHECK_STR(escape_log(out, 1, "abc", 3), "");
    CHECK(escape_log(out, 0, "abc", 3) == out);
    /* the readable variant for the playlist log */
    CHECK_STR(escape_log_utf8(out, sizeof(out), "T\xc3\xaftle|\n\\", 9),
              "T\xc3\xaftle|\\x0A\\\\");
    CHECK_STR(escape_log_utf8(out, sizeof(out), "\xc2\x85\xff\xc3", 4), "\\xC2\\x85\\xFF\\xC3");
    CHECK_STR(escape_log_utf8(out, 3, "\xc3\xaf\xc3\xaf", 4), "\xc3\xaf");
    CHECK_STR(escape_log_utf8(out, sizeof(out), "\"q\"\r", 4), "\"q\"\\x0D");
}

static void json_buf_appends_the_same_escape(void)
{
    buf_t b = BUF_INIT;
    CHECK(escape_json_buf(&b, "a\"</b\xff", 6, 1) == 0);
    CHECK(escape_json_buf(&b, "\n", 1, 0) == 0);
    CHECK(escape_json_buf(&b, NULL, 0, 1) == 0);
    CHECK_STR(b.data, "\"a\\\"<\\/b\xef\xbf\xbd\"\\n\"\"");
    buf_free(&b);
}

int main(void)
{
    RUN(xml_escapes_markup_and_drops_controls);
    RUN(json_escapes_quotes_controls_and_script_end);
    RUN(json_buf_appends_the_same_escape);
    RUN(log_escape_never_emits_controls);
    return testlib_done();
}
