package testimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// annotationImageName is the index annotation containerd's Import reads as
// the full image name; the OCI ref-name annotation alone would be a bare tag.
const annotationImageName = "io.containerd.image.name"

// File is one regular file of the image's only layer.
type File struct {
	// Path inside the image, relative to its root ("app", "etc/passwd").
	Path string
	// Source is read from disk when Data is nil.
	Source string
	Data   []byte
	Mode   int64
}

// Image describes a single-layer image.
type Image struct {
	// Ref is the full name containerd will list, e.g. "skiff.test/app:v1".
	Ref        string
	Files      []File
	Dirs       []string // extra directories (created 0755; "tmp" gets 1777)
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
}

// Pack writes img as an OCI image-layout tarball (oci-layout, index.json and
// blobs/sha256/*) to w. The layer is an uncompressed tar so its digest is
// also its diffID. Every timestamp is the Unix epoch, so the same inputs give
// the same bytes.
func Pack(w io.Writer, img Image) error {
	if img.Ref == "" {
		return errors.New("testimage: image ref is empty")
	}
	layer, err := layerTar(img)
	if err != nil {
		return err
	}
	layerDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageLayer,
		Digest:    digest.FromBytes(layer),
		Size:      int64(len(layer)),
	}
	env := img.Env
	if env == nil {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	epoch := time.Unix(0, 0).UTC()
	config, err := json.Marshal(ocispec.Image{
		Created:  &epoch,
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Config: ocispec.ImageConfig{
			Entrypoint: img.Entrypoint,
			Cmd:        img.Cmd,
			Env:        env,
			WorkingDir: img.WorkingDir,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDesc.Digest}},
	})
	if err != nil {
		return fmt.Errorf("testimage: encode config: %w", err)
	}
	configDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageConfig,
		Digest:    digest.FromBytes(config),
		Size:      int64(len(config)),
	}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return fmt.Errorf("testimage: encode manifest: %w", err)
	}
	manifestDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageManifest,
		Digest:    digest.FromBytes(manifest),
		Size:      int64(len(manifest)),
		Platform:  &ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Annotations: map[string]string{
			annotationImageName:       img.Ref,
			ocispec.AnnotationRefName: refTag(img.Ref),
		},
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return fmt.Errorf("testimage: encode index: %w", err)
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return fmt.Errorf("testimage: encode oci-layout: %w", err)
	}

	tw := tar.NewWriter(w)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch}); err != nil {
			return fmt.Errorf("testimage: write tarball: %w", err)
		}
	}
	entries := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{"index.json", index},
		{blobPath(configDesc.Digest), config},
		{blobPath(manifestDesc.Digest), manifest},
		{blobPath(layerDesc.Digest), layer},
	}
	for _, e := range entries {
		if err := writeFile(tw, e.name, e.data, 0o644); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("testimage: finish tarball: %w", err)
	}
	return nil
}

// refTag is the part of a reference after its last ':' when that colon
// belongs to the tag, not to a registry port.
func refTag(ref string) string {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return "latest"
	}
	return ref[i+1:]
}

func blobPath(d digest.Digest) string {
	return "blobs/" + d.Algorithm().String() + "/" + d.Encoded()
}

// layerTar builds the layer: the directories, then the files, each parent
// directory entry before its children as image unpackers expect.
func layerTar(img Image) ([]byte, error) {
	dirs := map[string]bool{}
	for _, d := range img.Dirs {
		dirs[strings.Trim(path.Clean(d), "/")] = true
	}
	for _, f := range img.Files {
		p := strings.Trim(path.Clean(f.Path), "/")
		if p == "" || p == "." || strings.HasPrefix(p, "..") {
			return nil, fmt.Errorf("testimage: bad file path %q", f.Path)
		}
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sortedDirs := make([]string, 0, len(dirs))
	for d := range dirs {
		if d != "" && d != "." {
			sortedDirs = append(sortedDirs, d)
		}
	}
	sort.Strings(sortedDirs)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, d := range sortedDirs {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: epoch}); err != nil {
			return nil, fmt.Errorf("testimage: write layer: %w", err)
		}
	}
	for _, f := range img.Files {
		data := f.Data
		if data == nil {
			b, err := os.ReadFile(f.Source)
			if err != nil {
				return nil, fmt.Errorf("testimage: read %s: %w", f.Source, err)
			}
			data = b
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := writeFile(tw, strings.Trim(path.Clean(f.Path), "/"), data, mode); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("testimage: finish layer: %w", err)
	}
	return buf.Bytes(), nil
}

func writeFile(tw *tar.Writer, name string, data []byte, mode int64) error {
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     mode,
		Size:     int64(len(data)),
		ModTime:  time.Unix(0, 0).UTC(),
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("testimage: write %s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("testimage: write %s: %w", name, err)
	}
	return nil
}
