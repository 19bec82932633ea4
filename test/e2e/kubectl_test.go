package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const appManifest = `apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  color: blue
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: shop
stringData:
  password: hunter2
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 80
`

const crdManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wg]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
              color: {type: string, default: blue}
`

const widgetManifest = `apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: shop
spec:
  size: 3
`

// siteManifest is a labelled set `apply --prune -l set=site` manages;
// pruneConfigMap is its last object, left out to see it pruned.
const siteManifest = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: site
  namespace: shop
  labels: {set: site}
spec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: keep
  namespace: shop
  labels: {set: site}
`

const pruneConfigMap = `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: drop
  namespace: shop
  labels: {set: site}
`

// kubectlMinors are the kubectl releases on the machine (1.27 … 1.33).
var kubectlMinors = []int{27, 28, 29, 30, 31, 32, 33}

// TestKubectlSession runs a realistic kubectl session against a fresh
// server with each kubectl release under test. A session takes a few
// seconds, so every release runs the whole of it.
func TestKubectlSession(t *testing.T) {
	for _, minor := range kubectlMinors {
		t.Run(fmt.Sprintf("kubectl-1.%d", minor), func(t *testing.T) {
			s := startServer(t)
			k := newKubectl(t, s, minor)
			kubectlSession(t, k)
		})
	}
}

func kubectlSession(t *testing.T, k *kubectl) {
	out := k.ok("version")
	contains(t, "version", out, "Server Version", "v1.33.0")

	out = k.okIn(appManifest, "apply", "-f", "-")
	contains(t, "apply", out, "namespace/shop created", "configmap/settings created", "secret/creds created",
		"deployment.apps/web created", "service/web created")
	out = k.okIn(appManifest, "apply", "-f", "-")
	contains(t, "re-apply", out, "configmap/settings unchanged", "deployment.apps/web unchanged")

	// The CRD makes its resource served without a restart.
	k.okIn(crdManifest, "apply", "-f", "-")
	k.ok("wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.example.com")
	out = k.okIn(widgetManifest, "apply", "-f", "-")
	contains(t, "apply widget", out, "widget.example.com/w1 created")
	out = k.ok("get", "wg", "-n", "shop")
	contains(t, "get widgets", out, "NAME", "SIZE", "w1", "3")
	out = k.ok("get", "widget", "w1", "-n", "shop", "-o", "jsonpath={.spec.color}")
	if out != "blue" {
		t.Errorf("schema default: spec.color = %q, want blue", out)
	}

	// Output formats.
	out = k.ok("get", "deploy", "-n", "shop")
	contains(t, "get deploy", out, "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "web")
	out = k.ok("get", "deploy", "-n", "shop", "-o", "wide")
	contains(t, "get deploy -o wide", out, "CONTAINERS", "IMAGES", "SELECTOR", "nginx:1.25", "app=web")
	out = k.ok("get", "pods,svc,cm", "-n", "shop", "-o", "name")
	contains(t, "get -o name", out, "service/web", "configmap/settings")
	out = k.ok("get", "cm", "-A", "--show-labels")
	contains(t, "get -A", out, "NAMESPACE", "shop", "settings")
	out = k.ok("get", "ns", "shop", "-o", "json")
	var ns map[string]any
	if err := json.Unmarshal([]byte(out), &ns); err != nil || ns["kind"] != "Namespace" || ns["apiVersion"] != "v1" {
		t.Errorf("get -o json: kind/apiVersion missing (%v):\n%s", err, out)
	}
	out = k.ok("get", "secret", "creds", "-n", "shop", "-o", "yaml")
	contains(t, "get secret -o yaml", out, "password: aHVudGVyMg==", "kind: Secret")
	out = k.ok("get", "all", "-n", "shop")
	contains(t, "get all", out, "deployment.apps/web", "service/web")

	// get -w: the listing, then changes as one-row Tables.
	w := k.start("get", "cm", "-n", "shop", "-w")
	w.waitFor("settings")
	k.ok("create", "configmap", "watched", "-n", "shop", "--from-literal=a=b")
	w.waitFor("watched")
	k.ok("delete", "configmap", "watched", "-n", "shop")
	w.stop()
	if !strings.Contains(w.out.String(), "NAME") || !strings.Contains(w.out.String(), "DATA") {
		t.Errorf("get -w printed no table header:\n%s", w.out.String())
	}

	// Mutations.
	contains(t, "label", k.ok("label", "deploy", "web", "-n", "shop", "tier=front"), "deployment.apps/web labeled")
	// kubectl 1.27 prints "annotate", later releases "annotated".
	contains(t, "annotate", k.ok("annotate", "cm", "settings", "-n", "shop", "owner=team-a"), "configmap/settings annotate")
	contains(t, "patch", k.ok("patch", "cm", "settings", "-n", "shop", "-p", `{"data":{"size":"L"}}`), "configmap/settings patched")
	contains(t, "json patch", k.ok("patch", "deploy", "web", "-n", "shop", "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":3}]`), "deployment.apps/web patched")
	contains(t, "scale", k.ok("scale", "deploy", "web", "-n", "shop", "--replicas=5"), "deployment.apps/web scaled")
	out = k.ok("get", "deploy", "web", "-n", "shop", "-o", "jsonpath={.spec.replicas} {.metadata.generation} {.metadata.labels.tier}")
	if out != "5 3 front" {
		t.Errorf("after patch and scale: replicas, generation, label = %q, want \"5 3 front\"", out)
	}
	out = k.ok("get", "cm", "settings", "-n", "shop", "-o", "jsonpath={.data.size} {.metadata.annotations.owner}")
	if out != "L team-a" {
		t.Errorf("after patch and annotate: %q", out)
	}
	out = k.okIn(appManifest, "apply", "--server-side", "--force-conflicts", "-f", "-")
	contains(t, "server-side apply", out, "deployment.apps/web serverside-applied")

	// apply --prune: kubectl's default prune list includes
	// networking.k8s.io/v1 Ingress, so it fails unless the server serves it.
	out = k.okIn(siteManifest+pruneConfigMap, "apply", "--prune", "-l", "set=site", "-f", "-")
	contains(t, "apply --prune", out, "ingress.networking.k8s.io/site created", "configmap/keep created", "configmap/drop created")
	out = k.okIn(siteManifest, "apply", "--prune", "-l", "set=site", "-f", "-")
	contains(t, "apply --prune without drop", out, "ingress.networking.k8s.io/site unchanged", "configmap/keep unchanged", "configmap/drop pruned")
	contains(t, "pruned configmap", k.fails("", "get", "cm", "drop", "-n", "shop"), "NotFound")
	out = k.ok("get", "ing", "-n", "shop")
	contains(t, "get ingress", out, "NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE", "site", "nginx", "shop.example.com", "80")

	// Discovery: every release reads the aggregated document (v2beta1 up to
	// 1.29, v2 later) and so never asks for a group/version's resource list.
	fresh := k.withFreshCache()
	out = fresh.ok("api-resources", "-v=6")
	contains(t, "api-resources", out, "deployments", "deploy", "apps/v1", "widgets", "wg", "example.com/v1", "customresourcedefinitions",
		"daemonsets", "ds")
	// -v=6 logs each request's URL (the log format differs between releases).
	contains(t, "api-resources requests", out, "/api?timeout=", "/apis?timeout=")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "/apis/apps/v1?") || strings.Contains(line, "/api/v1?") {
			t.Errorf("kubectl fell back to legacy discovery: %s", line)
		}
	}
	out = fresh.ok("api-resources", "--api-group=example.com", "-o", "wide")
	contains(t, "api-resources wide", out, "widgets", "wg", "example.com/v1", "true", "Widget", "create,delete,deletecollection,get,list,patch,update,watch")

	// explain reads the schemas served in OpenAPI v3: built-in kinds with
	// Kubernetes' descriptions, custom resources from their CRD.
	out = k.ok("explain", "pods.spec.containers.image")
	contains(t, "explain pod field", out, "KIND:", "Pod", "FIELD:", "image", "<string>", "Container image name")
	out = k.ok("explain", "deployments.spec")
	contains(t, "explain deployment spec", out, "Deployment", "replicas", "<integer>", "selector", "<LabelSelector>", "template", "<PodTemplateSpec> -required-")
	out = k.ok("explain", "ingress.spec")
	contains(t, "explain ingress spec", out, "Ingress", "ingressClassName", "<string>", "rules", "defaultBackend")
	out = k.ok("explain", "widgets.spec")
	contains(t, "explain widget", out, "Widget", "size", "<integer> -required-", "color", "<string>")

	// Errors, as Kubernetes prints them.
	badPod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\n  namespace: shop\nspec:\n  containers:\n  - name: c\n"
	out = k.fails(badPod, "apply", "-f", "-")
	contains(t, "invalid pod", out, `The Pod "bad" is invalid: spec.containers[0].image: Required value`)
	// A matchLabelKeys key the selector already requires is refused after
	// the API server merged the keys into the selector.
	keyTwice := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: keys\n  namespace: shop\n  labels: {app: web}\nspec:\n" +
		"  containers:\n  - {name: c, image: busybox}\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n" +
		"      - {labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [app], topologyKey: kubernetes.io/hostname}\n"
	out = k.fails(keyTwice, "apply", "-f", "-")
	contains(t, "matchLabelKeys in selector", out, `The Pod "keys" is invalid: `+
		`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector`)
	unknown := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unk\n  namespace: shop\nfoo: bar\n"
	out = k.fails(unknown, "create", "--validate=strict", "-f", "-")
	contains(t, "unknown field strict", out, `strict decoding error: unknown field "foo"`)
	out = k.fails("", "get", "cm", "nope", "-n", "shop")
	contains(t, "not found", out, `Error from server (NotFound): configmaps "nope" not found`)
	stale := k.ok("get", "cm", "settings", "-n", "shop", "-o", "json")
	k.ok("label", "cm", "settings", "-n", "shop", "bump=1")
	out = k.fails(stale, "replace", "-f", "-")
	contains(t, "conflict", out, "Operation cannot be fulfilled on configmaps \"settings\": the object has been modified; please apply your changes to the latest version and try again")
	badWidget := strings.Replace(widgetManifest, "size: 3", "size: 0", 1)
	out = k.fails(badWidget, "apply", "-f", "-")
	contains(t, "invalid widget", out, `The Widget "w1" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`)

	// Deletion.
	out = k.ok("delete", "deploy", "web", "-n", "shop", "--wait")
	contains(t, "delete", out, `deployment.apps "web" deleted`)
	out = k.fails("", "get", "deploy", "web", "-n", "shop")
	contains(t, "get deleted", out, "NotFound")
	out = k.ok("delete", "widget", "w1", "-n", "shop", "--wait")
	contains(t, "delete widget", out, `widget.example.com "w1" deleted`)
}
