/* The listen address of Cuvil's HTTP servers (see netlib.h). */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/netlib.h"

enum { LISTEN_MAX = 300 };

int cv_net_listen_addr(const char *listen, struct sockaddr_storage *ss, bool *v6, char *why,
                       size_t why_len)
{
    char host[LISTEN_MAX];
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    if (!colon || strlen(listen) >= LISTEN_MAX || !colon[1]) {
        snprintf(why, why_len, "'%.100s' is not host:port", listen ? listen : "");
        return -1;
    }
    size_t hl = (size_t)(colon - listen);
    memcpy(host, listen, hl);
    host[hl] = '\0';
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int e = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
    if (e != 0 || !ai) {
        snprintf(why, why_len, "'%s': %s", listen, gai_strerror(e));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    return 0;
}
