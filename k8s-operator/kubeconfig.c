/* Where the API server is: the pod's service account (in-cluster) or a
 * kubeconfig file. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/strbuf.h"
#include "common/yamldoc.h"
#include "k8s-operator/internal.h"

#define PEM_MAX ((size_t)1 << 20)

static int config_error(cv_diag *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int config_error(cv_diag *d, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_diag_vadd(d, CV_SEV_ERROR, code, (cv_span){0}, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

char *k8s_read_trimmed(const char *path, size_t max, size_t *len, cv_diag *d)
{
    char *s = NULL;
    size_t n = 0;
    if (cv_fs_read_file(path, max, &s, &n, d) != 0)
        return NULL;
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    if (len)
        *len = n;
    return s;
}

void cv_k8s_config_free(cv_k8s_config *c)
{
    if (c->token)
        explicit_bzero(c->token, strlen(c->token));
    if (c->key_pem)
        explicit_bzero(c->key_pem, c->key_len);
    free(c->server);
    free(c->ns);
    free(c->token);
    free(c->token_file);
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    *c = (cv_k8s_config){0};
}

/* ------------------------------------------------------------ in-cluster */

int cv_k8s_config_in_cluster(const char *sa_dir, cv_k8s_config *out, cv_diag *d)
{
    *out = (cv_k8s_config){0};
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port || strspn(port, "0123456789") != strlen(port))
        return config_error(d, CV_E_K8S_NO_CONFIG, "not running in a Kubernetes pod "
                            "(KUBERNETES_SERVICE_HOST/PORT unset)");
    const char *dir = sa_dir ? sa_dir : CV_K8S_SA_DIR;
    cv_sb sb = CV_SB_INIT;
    /* An IPv6 address goes in brackets. */
    cv_sb_printf(&sb, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    out->server = cv_sb_steal(&sb);
    char *token_path = cv_fs_join(dir, "token"), *ca_path = cv_fs_join(dir, "ca.crt"),
         *ns_path = cv_fs_join(dir, "namespace");
    int rc = -1;
    if (token_path && ca_path && ns_path && out->server &&
        (out->token = k8s_read_trimmed(token_path, K8S_TOKEN_MAX, NULL, d)) &&
        (out->ca_pem = k8s_read_trimmed(ca_path, PEM_MAX, &out->ca_len, d)) &&
        (out->ns = k8s_read_trimmed(ns_path, 256, NULL, d))) {
        out->token_file = token_path;
        token_path = NULL;
        rc = 0;
    }
    free(token_path);
    free(ca_path);
    free(ns_path);
    if (rc)
        cv_k8s_config_free(out);
    return rc;
}

/* ------------------------------------------------------------ kubeconfig */

static int b64_value(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 (white space skipped, '=' padding); malloc'd or NULL. */
static char *b64_decode(const char *s, size_t *len)
{
    size_t n = strlen(s);
    char *out = malloc(n / 4 * 3 + 4);
    if (!out)
        return NULL;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t')
            continue;
        int v = b64_value(c);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)(acc >> bits & 0xff);
        }
    }
    out[o] = '\0';
    *len = o;
    return out;
}

/* The entry of a named list (contexts, clusters, users): its `field`. */
static const json_t *named(const json_t *root, const char *list, const char *name,
                           const char *field)
{
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(root, list), i, e)
        if (strcmp(k8s_str(e, "name"), name) == 0)
            return json_object_get(e, field);
    return NULL;
}

/* A PEM from "<key>-data" (base64) or "<key>" (a file, relative to the
 * kubeconfig's directory).  0 with *pem NULL when neither is set. */
static int pem_field(const json_t *obj, const char *key, const char *dir, char **pem,
                     size_t *len, cv_diag *d)
{
    char data_key[64];
    snprintf(data_key, sizeof data_key, "%s-data", key);
    const char *data = k8s_str(obj, data_key), *file = k8s_str(obj, key);
    *pem = NULL;
    *len = 0;
    if (*data) {
        if (!(*pem = b64_decode(data, len)))
            return config_error(d, CV_E_K8S_BAD_KUBECONFIG, "kubeconfig: %s is not base64",
                                data_key);
        return 0;
    }
    if (!*file)
        return 0;
    char *path = file[0] == '/' ? strdup(file) : cv_fs_join(dir, file);
    *pem = path ? k8s_read_trimmed(path, PEM_MAX, len, d) : NULL;
    free(path);
    return *pem ? 0 : -1;
}

static int from_user(const json_t *user, const char *dir, cv_k8s_config *out, cv_diag *d)
{
    if (json_object_get(user, "exec") || json_object_get(user, "auth-provider"))
        return config_error(d, CV_E_K8S_BAD_KUBECONFIG,
                            "kubeconfig: the user authenticates with an %s plugin, which cuvil "
                            "does not run; use a token or a client certificate",
                            json_object_get(user, "exec") ? "exec" : "auth-provider");
    const char *token = k8s_str(user, "token"), *token_file = k8s_str(user, "tokenFile");
    if (*token) {
        out->token = strdup(token);
    } else if (*token_file) {
        out->token_file = token_file[0] == '/' ? strdup(token_file) : cv_fs_join(dir, token_file);
        if (!out->token_file ||
            !(out->token = k8s_read_trimmed(out->token_file, K8S_TOKEN_MAX, NULL, d)))
            return -1;
    }
    if (pem_field(user, "client-certificate", dir, &out->cert_pem, &out->cert_len, d) ||
        pem_field(user, "client-key", dir, &out->key_pem, &out->key_len, d))
        return -1;
    if (!out->cert_pem != !out->key_pem)
        return config_error(d, CV_E_K8S_BAD_KUBECONFIG, "kubeconfig: a client certificate needs "
                            "its key and a key its certificate");
    return 0;
}

static int from_root(const json_t *root, const char *context, const char *dir,
                     cv_k8s_config *out, cv_diag *d)
{
    const char *ctx_name = context ? context : k8s_str(root, "current-context");
    if (!*ctx_name)
        return config_error(d, CV_E_K8S_BAD_KUBECONFIG, "kubeconfig: no current-context");
    const json_t *ctx = named(root, "contexts", ctx_name, "context");
    if (!ctx)
        return config_error(d, CV_E_K8S_BAD_KUBECONFIG, "kubeconfig: no context named '%.200s'",
                            ctx_name);
    const json_t *cluster = named(root, "clusters", k8s_str(ctx, "cluster"), "cluster");
    const char *server = k8s_str(cluster, "server");
    if (!*server)
        return config_error(d, CV_E_K8S_BAD_KUBECONFIG, "kubeconfig: the cluster '%.200s' of "
                            "context '%.200s' has no server", k8s_str(ctx, "cluster"), ctx_name);
    size_t n = strlen(server);
    while (n && server[n - 1] == '/')
        n--;
    out->server = strndup(server, n);
    out->insecure = json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"));
    if (*k8s_str(ctx, "namespace"))
        out->ns = strdup(k8s_str(ctx, "namespace"));
    if (pem_field(cluster, "certificate-authority", dir, &out->ca_pem, &out->ca_len, d))
        return -1;
    const char *user_name = k8s_str(ctx, "user");
    const json_t *user = *user_name ? named(root, "users", user_name, "user") : NULL;
    if (*user_name && !user)
        return config_error(d, CV_E_K8S_BAD_KUBECONFIG, "kubeconfig: no user named '%.200s'",
                            user_name);
    return user ? from_user(user, dir, out, d) : 0;
}

int cv_k8s_config_kubeconfig(const char *path, const char *context, cv_k8s_config *out,
                             cv_diag *d)
{
    *out = (cv_k8s_config){0};
    cv_yaml_doc *docs = NULL;
    int n = 0;
    if (cv_yaml_load_file(path, &docs, &n, d) != 0)
        return -1;
    char *dir = cv_fs_dirname(path);
    int rc = n != 1 || !json_is_object(docs[0].root)
                 ? config_error(d, CV_E_K8S_BAD_KUBECONFIG, "%.300s: not a kubeconfig (one YAML "
                                "mapping)", path)
                 : dir ? from_root(docs[0].root, context, dir, out, d) : -1;
    free(dir);
    cv_yaml_free(docs, n);
    if (rc)
        cv_k8s_config_free(out);
    return rc;
}

int cv_k8s_config_load(const char *kubeconfig, const char *context, cv_k8s_config *out,
                       cv_diag *d)
{
    if (kubeconfig)
        return cv_k8s_config_kubeconfig(kubeconfig, context, out, d);
    if (!context && getenv("KUBERNETES_SERVICE_HOST") && access(CV_K8S_SA_DIR "/token", R_OK) == 0)
        return cv_k8s_config_in_cluster(NULL, out, d);
    const char *env = getenv("KUBECONFIG");
    char path[4096];
    if (env && *env) {   /* a list like PATH: its first file */
        snprintf(path, sizeof path, "%.*s", (int)strcspn(env, ":"), env);
        return cv_k8s_config_kubeconfig(path, context, out, d);
    }
    const char *home = getenv("HOME");
    snprintf(path, sizeof path, "%s/.kube/config", home && *home ? home : "");
    if (access(path, R_OK) == 0)
        return cv_k8s_config_kubeconfig(path, context, out, d);
    *out = (cv_k8s_config){0};
    return config_error(d, CV_E_K8S_NO_CONFIG, "no Kubernetes configuration: not in a pod, no "
                        "--kubeconfig, no $KUBECONFIG and no %.300s", path);
}
