package apiserver_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/storage"
)

// A metadata client's watch (as=PartialObjectMetadata) gets bookmarks it can decode: client-go's
// metadata informers (the garbage collector's) would otherwise fail and relist at every bookmark.
func TestMetadataWatchBookmarks(t *testing.T) {
	srv := apiservertest.Start(t, func(c *storage.Config) { c.ProgressInterval = 100 * time.Millisecond })
	md := metadata.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	list, err := md.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := md.Resource(gvr).Namespace("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Bookmark:
			p, ok := ev.Object.(*metav1.PartialObjectMetadata)
			if !ok || p.ResourceVersion == "" {
				t.Fatalf("bookmark object %T %+v", ev.Object, ev.Object)
			}
			return
		case watch.Error:
			t.Fatalf("watch error: %+v", ev.Object)
		}
	}
	t.Fatal("watch ended without a bookmark")
}
