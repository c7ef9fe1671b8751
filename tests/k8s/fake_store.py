"""The object store behind tests/k8s/fake_apiserver.py: Kubernetes API
semantics for the few resources the operator and its manifests use.

What is real here (what the operator's tests rely on):
  - one resourceVersion counter for every write, as etcd's revision; no-op
    updates keep the object's resourceVersion and send no watch event;
  - metadata.generation starts at 1 and grows when anything but metadata and
    status changes;
  - the status subresource: writes to the object ignore .status, writes to
    /status change nothing but .status;
  - optimistic concurrency: a PUT or PATCH naming a resourceVersion other
    than the stored one gets 409 Conflict; a create of an existing name 409
    AlreadyExists;
  - JSON merge patch (RFC 7386) for application/merge-patch+json; other
    patch types get 415 (custom resources take no strategic merge patch);
  - an event history for watches, compacted on request (/fake/compact):
    watching from an older resourceVersion gets 410 Expired;
  - garbage collection: deleting an object deletes the objects whose
    ownerReferences name its uid (as the GC's background propagation);
  - a little validation that catches operator bugs: DNS-1123 names,
    selectors that match their pod template, immutable fields.
"""
import copy
import re
import threading
import time
import uuid

# (group, plural) -> (version, kind, namespaced, has status subresource)
RESOURCES = {
    ("", "configmaps"): ("v1", "ConfigMap", True, False),
    ("", "services"): ("v1", "Service", True, True),
    ("", "persistentvolumeclaims"): ("v1", "PersistentVolumeClaim", True, True),
    ("", "serviceaccounts"): ("v1", "ServiceAccount", True, False),
    ("", "secrets"): ("v1", "Secret", True, False),
    ("", "namespaces"): ("v1", "Namespace", False, True),
    ("apps", "deployments"): ("v1", "Deployment", True, True),
    ("apps", "statefulsets"): ("v1", "StatefulSet", True, True),
    ("rbac.authorization.k8s.io", "roles"): ("v1", "Role", True, False),
    ("rbac.authorization.k8s.io", "rolebindings"): ("v1", "RoleBinding", True, False),
    ("rbac.authorization.k8s.io", "clusterroles"): ("v1", "ClusterRole", False, False),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): ("v1", "ClusterRoleBinding", False,
                                                           False),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("v1", "CustomResourceDefinition",
                                                            False, True),
    ("cuvil.dev", "cuvilbuildclusters"): ("v1", "CuvilBuildCluster", True, True),
    ("cuvil.dev", "cuvilpipelines"): ("v1", "CuvilPipeline", True, True),
}

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
# Fields that may not change after create: JSON paths from the object root.
IMMUTABLE = {
    "StatefulSet": [("spec", "selector"), ("spec", "serviceName"),
                    ("spec", "volumeClaimTemplates"), ("spec", "podManagementPolicy")],
    "Deployment": [("spec", "selector")],
    "PersistentVolumeClaim": [("spec", "accessModes"), ("spec", "storageClassName"),
                              ("spec", "volumeMode")],
    "Service": [("spec", "clusterIP")],
}


class ApiError(Exception):
    """An API answer other than success: the HTTP code and a Status."""

    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def dig(obj, path):
    for p in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def quantity_bytes(q):
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?", str(q))
    if not m:
        raise ApiError(422, "Invalid", "quantity %r is not a valid quantity" % q)
    mult = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, None: 1}
    return float(m.group(1)) * mult[m.group(2)]


class Store:
    def __init__(self):
        self.lock = threading.Condition()
        self.objects = {}        # (group, plural, ns, name) -> object
        self.rv = 100            # the last resourceVersion handed out
        self.events = []         # (rv, group, plural, ns, type, object)
        self.compacted = 0       # watches from below this get 410
        self.watch_epoch = 0     # bumped by /fake/drop-watches
        self.stats = {"writes": 0, "watches": 0, "lists": 0, "gets": 0, "requests": []}
        self.failures = []       # injected: {"method", "prefix", "code", "count"}

    # ------------------------------------------------------------ helpers
    def _next_rv(self):
        self.rv += 1
        return self.rv

    def _event(self, group, plural, ns, etype, obj):
        self.events.append((int(obj["metadata"]["resourceVersion"]), group, plural, ns, etype,
                            copy.deepcopy(obj)))
        self.lock.notify_all()

    def _key(self, group, plural, ns, name):
        info = RESOURCES[(group, plural)]
        return (group, plural, ns if info[2] else "", name)

    def _get(self, group, plural, ns, name):
        obj = self.objects.get(self._key(group, plural, ns, name))
        if obj is None:
            raise ApiError(404, "NotFound", '%s "%s" not found' % (plural, name))
        return obj

    @staticmethod
    def _check_rv(stored, given):
        if given not in (None, "") and str(given) != stored["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict",
                           "Operation cannot be fulfilled on %s \"%s\": the object has been "
                           "modified; please apply your changes to the latest version and try "
                           "again" % (stored["kind"].lower(), stored["metadata"]["name"]))

    def _validate(self, kind, obj, old):
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        pattern = DNS1123_SUBDOMAIN if kind in ("CustomResourceDefinition", "ClusterRole",
                                                "ClusterRoleBinding", "Role",
                                                "RoleBinding") else DNS1123_LABEL
        if not isinstance(name, str) or not pattern.match(name) or len(name) > 253:
            raise ApiError(422, "Invalid", "metadata.name: Invalid value: %r" % name)
        refs = meta.get("ownerReferences") or []
        if sum(1 for r in refs if r.get("controller")) > 1:
            raise ApiError(422, "Invalid", "metadata.ownerReferences: only one controller")
        for r in refs:
            for f in ("apiVersion", "kind", "name", "uid"):
                if not r.get(f):
                    raise ApiError(422, "Invalid", "metadata.ownerReferences.%s: Required" % f)
        for k, v in list((meta.get("labels") or {}).items()) + \
                list((meta.get("annotations") or {}).items()):
            if not isinstance(v, str):
                raise ApiError(422, "Invalid", "metadata: label/annotation %s is not a string"
                               % k)
        if kind in ("Deployment", "StatefulSet"):
            self._validate_workload(kind, obj)
        if old is not None:
            for path in IMMUTABLE.get(kind, []):
                if dig(obj, path) != dig(old, path):
                    raise ApiError(422, "Invalid", "%s: Forbidden: field is immutable"
                                   % ".".join(path))
            if kind == "PersistentVolumeClaim":
                path = ("spec", "resources", "requests", "storage")
                if quantity_bytes(dig(obj, path)) < quantity_bytes(dig(old, path)):
                    raise ApiError(422, "Invalid", "spec.resources.requests.storage: Forbidden:"
                                   " field can not be less than previous value")

    @staticmethod
    def _validate_workload(kind, obj):
        spec = obj.get("spec") or {}
        sel = dig(spec, ("selector", "matchLabels")) or {}
        labels = dig(spec, ("template", "metadata", "labels")) or {}
        if not sel or any(labels.get(k) != v for k, v in sel.items()):
            raise ApiError(422, "Invalid", "spec.template.metadata.labels: Invalid value: "
                           "`selector` does not match template `labels`")
        if kind == "StatefulSet" and not spec.get("serviceName"):
            raise ApiError(422, "Invalid", "spec.serviceName: Required value")
        containers = dig(spec, ("template", "spec", "containers")) or []
        if not containers:
            raise ApiError(422, "Invalid", "spec.template.spec.containers: Required value")
        for c in containers:
            if not c.get("name") or not c.get("image"):
                raise ApiError(422, "Invalid", "spec.template.spec.containers: name and image "
                               "are required")
        vols = {v.get("name") for v in dig(spec, ("template", "spec", "volumes")) or []}
        vols |= {dig(v, ("metadata", "name")) for v in spec.get("volumeClaimTemplates") or []}
        for c in containers:
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in vols:
                    raise ApiError(422, "Invalid", "volumeMounts[%s]: Not found" % m.get("name"))

    @staticmethod
    def _spec_part(obj):
        return {k: v for k, v in obj.items() if k not in ("metadata", "status")}

    # ------------------------------------------------------------ verbs
    def list(self, group, plural, ns, selector=None):
        with self.lock:
            self.stats["lists"] += 1
            version, kind, namespaced, _ = RESOURCES[(group, plural)]
            items = [copy.deepcopy(o) for (g, p, n, _), o in sorted(self.objects.items())
                     if g == group and p == plural and (not ns or n == ns) and
                     matches(o, selector)]
            api = "%s/%s" % (group, version) if group else version
            return {"kind": kind + "List", "apiVersion": api,
                    "metadata": {"resourceVersion": str(self.rv)}, "items": items}

    def get(self, group, plural, ns, name):
        with self.lock:
            self.stats["gets"] += 1
            return copy.deepcopy(self._get(group, plural, ns, name))

    def create(self, group, plural, ns, obj):
        with self.lock:
            version, kind, namespaced, has_status = RESOURCES[(group, plural)]
            if not isinstance(obj, dict) or obj.get("kind") != kind:
                raise ApiError(400, "BadRequest", "the body is not a %s" % kind)
            meta = obj.setdefault("metadata", {})
            if namespaced:
                if meta.get("namespace", ns) != ns:
                    raise ApiError(400, "BadRequest", "the namespace of the object does not "
                                   "match the namespace on the request")
                meta["namespace"] = ns
            if self._key(group, plural, ns, meta.get("name")) in self.objects:
                raise ApiError(409, "AlreadyExists",
                               '%s "%s" already exists' % (plural, meta.get("name")))
            self._validate(kind, obj, None)
            if has_status:
                obj.pop("status", None)
            for f in ("resourceVersion", "uid", "generation", "creationTimestamp",
                      "deletionTimestamp"):
                meta.pop(f, None)
            meta.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp=now_rfc3339(),
                        resourceVersion=str(self._next_rv()))
            self.objects[self._key(group, plural, ns, meta["name"])] = obj
            self._event(group, plural, ns, "ADDED", obj)
            return copy.deepcopy(obj)

    def update(self, group, plural, ns, name, sub, new, patch):
        """PUT (patch False: new replaces) or PATCH (patch True: new is a
        merge patch), on the object (sub None) or its status (sub
        "status")."""
        with self.lock:
            version, kind, namespaced, has_status = RESOURCES[(group, plural)]
            old = self._get(group, plural, ns, name)
            if not isinstance(new, dict):
                raise ApiError(400, "BadRequest", "the body is not a JSON object")
            given_rv = dig(new, ("metadata", "resourceVersion"))
            if not patch and not given_rv:
                raise ApiError(422, "Invalid", "metadata.resourceVersion: Invalid value: 0x0: "
                               "must be specified for an update")
            self._check_rv(old, given_rv)
            obj = merge_patch(old, new) if patch else copy.deepcopy(new)
            if sub == "status":
                status = obj.get("status")
                obj = copy.deepcopy(old)
                if status is None:
                    obj.pop("status", None)
                else:
                    obj["status"] = status
            elif has_status:
                if "status" in old:
                    obj["status"] = copy.deepcopy(old["status"])
                else:
                    obj.pop("status", None)
            meta = obj.setdefault("metadata", {})
            for f in ("uid", "creationTimestamp", "namespace", "name", "generation"):
                if f in old["metadata"]:
                    meta[f] = old["metadata"][f]
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            if obj == old:
                return copy.deepcopy(old)   # a no-op: same resourceVersion, no event
            self._validate(kind, obj, old)
            if self._spec_part(obj) != self._spec_part(old):
                meta["generation"] = old["metadata"].get("generation", 1) + 1
            meta["resourceVersion"] = str(self._next_rv())
            self.objects[self._key(group, plural, ns, name)] = obj
            self._event(group, plural, ns, "MODIFIED", obj)
            return copy.deepcopy(obj)

    def delete(self, group, plural, ns, name):
        with self.lock:
            obj = self._get(group, plural, ns, name)
            self._remove(group, plural, ns, name, obj)
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": name, "kind": plural, "uid": obj["metadata"]["uid"]}}

    def _remove(self, group, plural, ns, name, obj):
        del self.objects[self._key(group, plural, ns, name)]
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        self._event(group, plural, ns, "DELETED", obj)
        uid = obj["metadata"]["uid"]
        for (g, p, n, nm), o in list(self.objects.items()):
            refs = o["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in refs) and \
                    self._key(g, p, n, nm) in self.objects:
                self._remove(g, p, n, nm, o)

    # ------------------------------------------------------------ watch
    def watch_start(self, group, plural, ns, rv):
        """The events to replay and the resourceVersion to go on from, or
        ApiError 410 when rv was compacted away.  rv None: the current
        objects as ADDED events."""
        with self.lock:
            self.stats["watches"] += 1
            if rv is None:
                items = self.list(group, plural, ns)["items"]
                return [("ADDED", o) for o in items], self.rv, self.watch_epoch
            if rv < self.compacted:
                raise ApiError(410, "Expired",
                               "too old resource version: %d (%d)" % (rv, self.compacted))
            return self._events_after(group, plural, ns, rv), self.rv, self.watch_epoch

    def _events_after(self, group, plural, ns, rv):
        return [(t, copy.deepcopy(o)) for (r, g, p, n, t, o) in self.events
                if r > rv and g == group and p == plural and (not ns or n == ns)]

    def watch_wait(self, group, plural, ns, rv, epoch, deadline):
        """Waits for events after rv; returns (events, new rv, still open)."""
        with self.lock:
            while True:
                if self.watch_epoch != epoch:
                    return [], rv, False
                if rv < self.compacted:
                    return [("ERROR", ApiError(410, "Expired", "too old resource version: "
                                               "%d (%d)" % (rv, self.compacted)).status())], \
                        rv, False
                evs = self._events_after(group, plural, ns, rv)
                if evs or self.rv > rv:
                    return evs, self.rv, True
                left = deadline - time.monotonic()
                if left <= 0:
                    return [], rv, False
                self.lock.wait(min(left, 0.5))

    def compact(self):
        with self.lock:
            self.compacted = self.rv   # a watch from an older version gets 410
            self.events = []
            self.lock.notify_all()
            return self.compacted

    def drop_watches(self):
        with self.lock:
            self.watch_epoch += 1
            self.lock.notify_all()


def matches(obj, selector):
    """Equality-based label selectors: k=v,k2=v2 (and k==v)."""
    if not selector:
        return True
    labels = dig(obj, ("metadata", "labels")) or {}
    for term in selector.split(","):
        k, _, v = term.replace("==", "=").partition("=")
        if labels.get(k.strip()) != v.strip():
            return False
    return True
