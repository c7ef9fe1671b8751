/* Checks for the value forms specs use: URLs, host:port lists and image
 * registries (sizes and durations: common/units.h).  Each is strict: what it
 * accepts is exactly what the JSON Schema patterns in schemas/ describe. */
#include "spec/spec_internal.h"

#include <stdint.h>
#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* host[:port] with a DNS-ish host or [IPv6]; port 1..65535. */
static bool host_port_ok(const char *s, size_t n, bool need_port)
{
    size_t h = 0;
    if (n && s[0] == '[') {
        while (h < n && s[h] != ']')
            h++;
        if (h == n || h == 1)
            return false;
        h++;
    } else {
        while (h < n && s[h] != ':') {
            char c = s[h];
            if (!(is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
                  c == '-' || c == '_'))
                return false;
            h++;
        }
        if (h == 0)
            return false;
    }
    if (h == n)
        return !need_port;
    if (s[h] != ':' || h + 1 == n || n - h - 1 > 5)
        return false;
    long port = 0;
    for (size_t i = h + 1; i < n; i++) {
        if (!is_digit(s[i]))
            return false;
        port = port * 10 + (s[i] - '0');
    }
    return port >= 1 && port <= 65535;
}

const char *spec_check_url(const char *s, bool http_only)
{
    static const char *const git_schemes[] = {"https://", "http://", "ssh://", "git://", "file://",
                                              NULL};
    static const char *const http_schemes[] = {"https://", "http://", NULL};
    const char *const *schemes = http_only ? http_schemes : git_schemes;
    for (const char *p = s; *p; p++)
        if (*p == ' ' || *p == '\t')
            return "contains whitespace";
    for (int i = 0; schemes[i]; i++) {
        size_t k = strlen(schemes[i]);
        if (strncmp(s, schemes[i], k) != 0)
            continue;
        const char *rest = s + k;
        if (strcmp(schemes[i], "file://") == 0)
            return rest[0] == '/' ? NULL : "file:// URLs need an absolute path (file:///srv/models.git)";
        const char *at = strchr(rest, '@'), *slash = strchr(rest, '/');
        const char *host = (at && (!slash || at < slash)) ? at + 1 : rest;
        size_t hn = slash ? (size_t)(slash - host) : strlen(host);
        return host_port_ok(host, hn, false) ? NULL : "malformed host or port";
    }
    if (http_only)
        return "expected an http:// or https:// URL";
    if (strstr(s, "://"))
        return "unsupported scheme (use https, http, ssh, git or file)";
    if (s[0] == '/')
        return NULL;   /* a local repository */
    const char *colon = strchr(s, ':');
    if (colon && colon > s && colon[1] && !memchr(s, '/', (size_t)(colon - s)))
        return NULL;   /* scp-like user@host:path */
    return "expected a URL, user@host:path, or an absolute local path";
}

const char *spec_check_brokers(const char *s)
{
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (!host_port_ok(p, n, true))
            return "expected host:port[,host:port...] (e.g. k1:9092,k2:9092)";
        if (!comma)
            return NULL;
        p = comma + 1;
    }
}

const char *spec_check_registry(const char *s)
{
    /* registry host[:port] then /path components: lowercase [a-z0-9._-]. */
    const char *slash = strchr(s, '/');
    size_t hn = slash ? (size_t)(slash - s) : strlen(s);
    if (!host_port_ok(s, hn, false))
        return "malformed registry host (expected e.g. registry.example.com/cuvil)";
    for (const char *p = slash; p && *p; p++) {
        if (*p == '/') {
            if (!p[1] || p[1] == '/')
                return "empty path component";
            continue;
        }
        if (!((*p >= 'a' && *p <= 'z') || is_digit(*p) || *p == '.' || *p == '_' || *p == '-'))
            return "repository paths use lowercase letters, digits, '.', '_' and '-'";
    }
    return NULL;
}
