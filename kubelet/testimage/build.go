package testimage

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Ref is the name the image built by Build carries.
const Ref = "skiff.test/testapp:v1"

// appPackage is the import path of the program packed by Build.
const appPackage = "github.com/skiffkube/skiff/kubelet/testimage/app"

// Build compiles ./app statically for Linux, packs it as /app (entrypoint,
// default command "sleep") with an empty /tmp, and writes the OCI tarball to
// dir. It returns the tarball's path and the image reference. It must run
// inside the skiff module (any test of the module does).
func Build(t testing.TB, dir string) (tarPath, imageRef string) {
	t.Helper()
	bin := filepath.Join(dir, "app")
	cmd := exec.Command(goTool(), "build", "-trimpath", "-o", bin, appPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testimage: go build %s: %v\n%s", appPackage, err, out)
	}
	tarPath = filepath.Join(dir, "testapp.tar")
	f, err := os.Create(tarPath)
	if err != nil {
		t.Fatalf("testimage: %v", err)
	}
	defer f.Close()
	err = Pack(f, Image{
		Ref:        Ref,
		Files:      []File{{Path: "app", Source: bin, Mode: 0o755}, {Path: "etc/passwd", Data: []byte("root:x:0:0:root:/:/app\nnobody:x:65534:65534:nobody:/:/app\n"), Mode: 0o644}},
		Dirs:       []string{"tmp"},
		Entrypoint: []string{"/app"},
		Cmd:        []string{"sleep"},
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("testimage: %v", err)
	}
	return tarPath, Ref
}

// logDriverPackage is the import path of the log driver that BuildLogDriver builds.
const logDriverPackage = "github.com/skiffkube/skiff/kubelet/logdriver/testdriver"

// BuildLogDriver compiles the log driver into dir and returns its absolute
// path, for a containerd runtime under test (Config.LogDriver): the shim runs
// it to write each container's output, as it runs `skiff log-driver` on a
// node.
func BuildLogDriver(t testing.TB, dir string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(dir, "log-driver"))
	if err != nil {
		t.Fatalf("testimage: %v", err)
	}
	if out, err := exec.Command(goTool(), "build", "-o", bin, logDriverPackage).CombinedOutput(); err != nil {
		t.Fatalf("testimage: go build %s: %v\n%s", logDriverPackage, err, out)
	}
	return bin
}

// goTool finds the go command: the one that runs this test, else PATH.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}
