#!/usr/bin/env python3
"""Test certificates for the fake API server: a CA, a server certificate for
127.0.0.1 and a client certificate, all signed by the CA (openssl, EC P-256,
valid one day).  Usage: make_certs.py DIR"""
import os
import subprocess
import sys


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def main():
    d = sys.argv[1]
    p = lambda name: os.path.join(d, name)  # noqa: E731
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", p("ca.key"), "-out", p("ca.crt"), "-days", "1",
            "-subj", "/CN=cuvil-test-ca")
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
                      ("client", "extendedKeyUsage=clientAuth\n")):
        with open(p(name + ".ext"), "w") as f:
            f.write(ext)
        openssl("req", *ec, "-keyout", p(name + ".key"), "-out", p(name + ".csr"), "-subj",
                "/CN=cuvil-test-" + name + ("/O=system:masters" if name == "client" else ""))
        openssl("x509", "-req", "-in", p(name + ".csr"), "-CA", p("ca.crt"), "-CAkey",
                p("ca.key"), "-CAcreateserial", "-out", p(name + ".crt"), "-days", "1",
                "-extfile", p(name + ".ext"))


if __name__ == "__main__":
    main()
