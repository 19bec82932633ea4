package testimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// readTar returns every regular file of a tarball by name.
func readTar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = data
		}
	}
}

func blob(t *testing.T, files map[string][]byte, d ocispec.Descriptor) []byte {
	t.Helper()
	b, ok := files[blobPath(d.Digest)]
	if !ok {
		t.Fatalf("blob %s missing", d.Digest)
	}
	if digest.FromBytes(b) != d.Digest || int64(len(b)) != d.Size {
		t.Fatalf("blob %s: content does not match its descriptor", d.Digest)
	}
	return b
}

func TestPackWritesAConsistentImageLayout(t *testing.T) {
	var out bytes.Buffer
	err := Pack(&out, Image{
		Ref:        "skiff.test/x:v2",
		Files:      []File{{Path: "bin/tool", Data: []byte("#!"), Mode: 0o755}},
		Dirs:       []string{"tmp"},
		Entrypoint: []string{"/bin/tool"},
		Cmd:        []string{"run"},
	})
	if err != nil {
		t.Fatal(err)
	}
	files := readTar(t, out.Bytes())
	if _, ok := files[ocispec.ImageLayoutFile]; !ok {
		t.Fatal("oci-layout missing")
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(index.Manifests))
	}
	md := index.Manifests[0]
	if got := md.Annotations[annotationImageName]; got != "skiff.test/x:v2" {
		t.Errorf("image name annotation = %q", got)
	}
	if got := md.Annotations[ocispec.AnnotationRefName]; got != "v2" {
		t.Errorf("ref name annotation = %q", got)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(blob(t, files, md), &manifest); err != nil {
		t.Fatal(err)
	}
	var config ocispec.Image
	if err := json.Unmarshal(blob(t, files, manifest.Config), &config); err != nil {
		t.Fatal(err)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	layer := readTar(t, blob(t, files, manifest.Layers[0]))
	if string(layer["bin/tool"]) != "#!" {
		t.Errorf("layer bin/tool = %q", layer["bin/tool"])
	}
	if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != manifest.Layers[0].Digest {
		t.Errorf("diffIDs %v do not name the uncompressed layer %s", config.RootFS.DiffIDs, manifest.Layers[0].Digest)
	}
	if got := config.Config.Entrypoint; len(got) != 1 || got[0] != "/bin/tool" {
		t.Errorf("entrypoint = %v", got)
	}
}

func TestPackIsDeterministic(t *testing.T) {
	img := Image{Ref: "skiff.test/x:v1", Files: []File{{Path: "a", Data: []byte("1")}}}
	var a, b bytes.Buffer
	if err := Pack(&a, img); err != nil {
		t.Fatal(err)
	}
	if err := Pack(&b, img); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two packs of the same image differ")
	}
}

func TestPackRejectsBadInput(t *testing.T) {
	cases := []struct {
		name string
		img  Image
	}{
		{"empty ref", Image{Files: []File{{Path: "a", Data: []byte("1")}}}},
		{"path escaping the root", Image{Ref: "x:v1", Files: []File{{Path: "../etc/passwd", Data: []byte("1")}}}},
		{"missing source file", Image{Ref: "x:v1", Files: []File{{Path: "a", Source: "/nonexistent/skiff"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Pack(io.Discard, tc.img); err == nil {
				t.Error("Pack succeeded, want an error")
			}
		})
	}
}

func TestRefTag(t *testing.T) {
	for ref, want := range map[string]string{
		"skiff.test/app:v1":     "v1",
		"localhost:5000/app":    "latest",
		"localhost:5000/app:v3": "v3",
		"app":                   "latest",
	} {
		if got := refTag(ref); got != want {
			t.Errorf("refTag(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestBuildCompilesTheTestProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a Go program")
	}
	tarPath, ref := Build(t, t.TempDir())
	if ref != Ref {
		t.Errorf("ref = %q", ref)
	}
	b, err := os.ReadFile(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := readTar(t, b)["index.json"]; !ok {
		t.Error("tarball has no index.json")
	}
}
