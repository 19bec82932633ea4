//go:build linux

package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	remoteerrors "github.com/containerd/containerd/v2/core/remotes/errors"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// normalizeRef turns "nginx" into "docker.io/library/nginx:latest", as
// Kubernetes nodes name images.
func normalizeRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("image %q: %w: %w", ref, krt.ErrInvalidConfig, err)
	}
	return named.String(), nil
}

// EnsureImage returns the image if present (unpacking it if needed), or
// pulls it unless policy is Never. With PullAlways a failed pull of a present
// image falls back to the local copy, since no registry may be reachable —
// but not when the registry refused the credentials (401 or 403): as on
// Kubernetes, Always then keeps a private image from a pod without its
// secret.
// A pull tries creds in order (the kubelet's keyring order) and stops at the
// first that works; without creds it is anonymous. As containerd's CRI,
// registries on localhost or a loopback address are spoken to in plain
// HTTP, all others in HTTPS.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, policy krt.PullPolicy, creds ...krt.Credential) (krt.Image, error) {
	ctx = r.ns(ctx)
	name, err := normalizeRef(ref)
	if err != nil {
		return krt.Image{}, err
	}
	img, getErr := r.c.GetImage(ctx, name)
	if getErr == nil && policy != krt.PullAlways {
		return r.ready(ctx, img)
	}
	if getErr != nil && policy == krt.PullNever {
		return krt.Image{}, fmt.Errorf("image %s: %w", name, krt.ErrImageNeverPull)
	}
	pulled, err := r.pull(ctx, name, creds)
	if err != nil {
		if getErr == nil && !authRefused(err) {
			r.log.Warn("pull failed, using the local image", "image", name, "err", err)
			return r.ready(ctx, img)
		}
		return krt.Image{}, &krt.PullError{Image: name, Err: err}
	}
	out, err := r.ready(ctx, pulled)
	out.Pulled = err == nil
	return out, err
}

// pull fetches name with each credential in turn (or anonymously without
// any); the errors of all attempts are joined as the kubelet aggregates them.
func (r *Runtime) pull(ctx context.Context, name string, creds []krt.Credential) (client.Image, error) {
	if len(creds) == 0 {
		creds = []krt.Credential{{}}
	}
	var errs []error
	for _, c := range creds {
		img, err := r.c.Pull(ctx, name, client.WithPullUnpack, client.WithPullSnapshotter(r.snapshotter),
			client.WithResolver(resolver(c)))
		if err == nil {
			return img, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// authRefused says whether a registry refused a pull's credentials (or
// their absence).
func authRefused(err error) bool {
	if errors.Is(err, docker.ErrInvalidAuthorization) {
		return true
	}
	var status remoteerrors.ErrUnexpectedStatus
	return errors.As(err, &status) && (status.StatusCode == http.StatusUnauthorized || status.StatusCode == http.StatusForbidden)
}

// resolver speaks to registries with credential c (none if it is zero).
func resolver(c krt.Credential) remotes.Resolver {
	opts := []docker.RegistryOpt{docker.WithPlainHTTP(docker.MatchLocalhost)}
	if c != (krt.Credential{}) {
		opts = append(opts, docker.WithAuthorizer(docker.NewDockerAuthorizer(docker.WithAuthCreds(func(string) (string, string, error) {
			if c.IdentityToken != "" {
				return "", c.IdentityToken, nil
			}
			return c.Username, c.Password, nil
		}))))
	}
	return docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(opts...)})
}

// ImagePresent says whether ref is stored in this runtime's namespace.
func (r *Runtime) ImagePresent(ctx context.Context, ref string) (bool, error) {
	ctx = r.ns(ctx)
	name, err := normalizeRef(ref)
	if err != nil {
		return false, err
	}
	_, err = r.c.GetImage(ctx, name)
	switch {
	case err == nil:
		return true, nil
	case errdefs.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("image %s: %w", name, err)
}

// ready unpacks img for the snapshotter if needed and describes it.
func (r *Runtime) ready(ctx context.Context, img client.Image) (krt.Image, error) {
	unpacked, err := img.IsUnpacked(ctx, r.snapshotter)
	if err != nil {
		return krt.Image{}, fmt.Errorf("image %s: %w", img.Name(), err)
	}
	if !unpacked {
		if err := img.Unpack(ctx, r.snapshotter); err != nil {
			return krt.Image{}, fmt.Errorf("unpack image %s: %w", img.Name(), err)
		}
	}
	return describe(ctx, img), nil
}

func describe(ctx context.Context, img client.Image) krt.Image {
	size, err := img.Size(ctx)
	if err != nil {
		size = 0
	}
	return krt.Image{Ref: img.Name(), Digest: img.Target().Digest.String(), Size: size}
}

// ImportImages loads every image of an OCI image-layout or docker-save
// archive (optionally compressed), unpacks them and returns their names.
func (r *Runtime) ImportImages(ctx context.Context, tarPath string) ([]string, error) {
	ctx = r.ns(ctx)
	f, err := os.Open(tarPath)
	if err != nil {
		return nil, fmt.Errorf("import images: %w", err)
	}
	defer f.Close()
	imgs, err := r.c.Import(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("import images from %s: %w", tarPath, err)
	}
	var refs []string
	for _, i := range imgs {
		img := client.NewImage(r.c, i)
		if _, err := r.ready(ctx, img); err != nil {
			return refs, fmt.Errorf("import images from %s: %w", tarPath, err)
		}
		refs = append(refs, i.Name)
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("import images from %s: the archive names no image (no io.containerd.image.name or org.opencontainers.image.ref.name annotation)", tarPath)
	}
	return refs, nil
}

// archiveSuffixes are the files ImportDir loads.
var archiveSuffixes = []string{".tar", ".tar.gz", ".tgz", ".tar.zst"}

// ImportDir imports every archive in dir (k3s's agent/images convention).
// A missing directory imports nothing; a bad archive is reported and the
// others are still imported.
func (r *Runtime) ImportDir(ctx context.Context, dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("import images: %w", err)
	}
	var refs []string
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !hasArchiveSuffix(e.Name()) {
			continue
		}
		got, err := r.ImportImages(ctx, filepath.Join(dir, e.Name()))
		refs = append(refs, got...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return refs, errors.Join(errs...)
}

func hasArchiveSuffix(name string) bool {
	for _, s := range archiveSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// ListImages lists the images in skiff's namespace, sorted by name.
func (r *Runtime) ListImages(ctx context.Context) ([]krt.Image, error) {
	ctx = r.ns(ctx)
	imgs, err := r.c.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]krt.Image, 0, len(imgs))
	for _, img := range imgs {
		out = append(out, describe(ctx, img))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out, nil
}

// RemoveImage deletes the image; its content is garbage-collected once no
// container uses it.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	name, err := normalizeRef(ref)
	if err != nil {
		return err
	}
	err = r.c.ImageService().Delete(r.ns(ctx), name, images.SynchronousDelete())
	return translate(err, "remove image "+name)
}

// DefaultRoot is containerd's default root directory.
const DefaultRoot = "/var/lib/containerd"

// ImageFSPath is a path on the file system holding unpacked images: the
// root containerd reports for the snapshotter, else DefaultRoot. Image
// garbage collection measures that file system.
func (r *Runtime) ImageFSPath(ctx context.Context) string {
	resp, err := r.c.IntrospectionService().Plugins(ctx, "type==io.containerd.snapshotter.v1,id=="+r.snapshotter)
	if err == nil {
		for _, p := range resp.Plugins {
			if root := p.Exports["root"]; root != "" && filepath.IsAbs(root) {
				return root
			}
		}
	}
	r.log.Warn("containerd does not tell its snapshotter's root, assuming the default", "snapshotter", r.snapshotter, "root", DefaultRoot, "err", err)
	return DefaultRoot
}
