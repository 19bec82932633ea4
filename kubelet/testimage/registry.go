package testimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ServeRegistry runs an in-memory OCI distribution registry on 127.0.0.1
// until stop is called or the test ends, and returns its host:port. With a
// user it answers every request without that user's password with 401 and
// a Basic challenge, as a registry requiring a login does.
func ServeRegistry(t testing.TB, user, password string) (host string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if user != "" {
		h = basicAuth(h, user, password)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	stop = func() { _ = srv.Close() }
	t.Cleanup(stop)
	return l.Addr().String(), stop
}

func basicAuth(next http.Handler, user, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="skiff-test"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Push uploads the image of the OCI tarball at tarPath (as Build writes)
// to ref ("127.0.0.1:5000/skiff/app:v1", plain HTTP) through the
// distribution API, logging in as user if one is given.
func Push(t testing.TB, tarPath, ref, user, password string) {
	t.Helper()
	if err := push(tarPath, ref, user, password); err != nil {
		t.Fatalf("testimage: push %s to %s: %v", tarPath, ref, err)
	}
}

func push(tarPath, ref, user, password string) error {
	files, err := readTarball(tarPath)
	if err != nil {
		return err
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) == 0 {
		return fmt.Errorf("index.json names no image (%v)", err)
	}
	mdesc := index.Manifests[0]
	manifest := files[blobPath(mdesc.Digest)]
	var m ocispec.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	host, repoTag, ok := strings.Cut(ref, "/")
	repo, tag, ok2 := strings.Cut(repoTag, ":")
	if !ok || !ok2 {
		return fmt.Errorf("reference %q is not host/repository:tag", ref)
	}
	base := "http://" + host + "/v2/" + repo
	do := func(method, url, contentType string, body []byte, want int) (*http.Response, error) {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, msg)
		}
		return resp, nil
	}
	for _, d := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
		// A monolithic upload: POST with the digest and the whole blob.
		data, ok := files[blobPath(d.Digest)]
		if !ok {
			return fmt.Errorf("blob %s missing from the archive", d.Digest)
		}
		if _, err := do(http.MethodPost, base+"/blobs/uploads/?digest="+d.Digest.String(), "application/octet-stream", data, http.StatusCreated); err != nil {
			return err
		}
	}
	_, err = do(http.MethodPut, base+"/manifests/"+tag, mdesc.MediaType, manifest, http.StatusCreated)
	return err
}

func readTarball(tarPath string) (map[string][]byte, error) {
	f, err := os.Open(tarPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}
