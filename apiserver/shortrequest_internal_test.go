package apiserver

import (
	"net/http/httptest"
	"testing"
)

func TestShortRequest(t *testing.T) {
	tests := []struct {
		method, target string
		upgrade        bool
		want           bool
	}{
		{"POST", "/api/v1/namespaces/a/pods", false, true},
		{"PUT", "/api/v1/namespaces/a/pods/p/status", false, true},
		{"POST", "/api/v1/namespaces/a/pods/p/binding", false, true},
		{"GET", "/apis/apps/v1/namespaces/a/deployments/d", false, true},
		{"GET", "/api/v1/pods", false, true},
		{"DELETE", "/api/v1/namespaces/a/pods/p", false, true},
		{"GET", "/api/v1/pods?watch=true", false, false},
		{"GET", "/api/v1/pods?watch=1", false, false},
		{"GET", "/api/v1/pods?labelSelector=a%3Db&w%61tch=true", false, false},
		{"GET", "/api/v1/pods?limit=500&resourceVersion=0", false, true},
		{"GET", "/api/v1/pods?watch=false", false, true},
		{"GET", "/api/v1/watch/namespaces/a/pods", false, false},
		{"GET", "/api/v1/namespaces/a/pods/p/log?follow=true", false, false},
		{"POST", "/api/v1/namespaces/a/pods/p/exec?command=sh", false, false},
		{"GET", "/api/v1/namespaces/a/pods/p/attach", true, false},
		{"POST", "/api/v1/namespaces/a/pods/p/portforward", false, false},
		{"GET", "/api/v1/nodes/n/proxy/metrics", false, false},
		{"GET", "/api/v1/namespaces/a/services/s/proxy", false, false},
		{"POST", "/api/v1/namespaces/a/pods", true, false},
		{"GET", "/debug/pprof/profile?seconds=20", false, false},
		{"GET", "/api/v1", false, false},
		{"GET", "/version", false, false},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if tc.upgrade {
			r.Header.Set("Upgrade", "websocket")
		}
		if got := shortRequest(r); got != tc.want {
			t.Errorf("%s %s (upgrade %v): short = %v, want %v", tc.method, tc.target, tc.upgrade, got, tc.want)
		}
	}
}
