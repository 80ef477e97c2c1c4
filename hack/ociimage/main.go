// Command ociimage writes Trainyard's container image as a tarball, with no container engine: a
// scratch image of one layer holding the static binary at /trainyard, run as 65532:65532.
// The Dockerfile at the repository root builds the same shape; keep the two in step.
//
//	go -C hack/ociimage run . -binary BIN -name REF -arch GOARCH -o OUT.tar
//
// OUT.tar is an OCI image layout (oci-layout, index.json, blobs/sha256/...) that also carries a
// Docker manifest.json naming the same blobs, the shape `docker save` writes since Docker 25:
// `docker load`, `podman load`, `kind load image-archive` and containerd's import all read it.
// Every timestamp is the Unix epoch, so the same binary always gives the same image digest.
//
// It is a module of its own so that go-containerregistry stays out of the operator's go.mod.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// The image's shape. The Dockerfile says the same: COPY to /trainyard, USER 65532:65532,
// ENTRYPOINT ["/trainyard"].
const (
	binaryPath = "/trainyard"
	// Numeric, so the kubelet can check runAsNonRoot without an /etc/passwd (scratch has none).
	user = "65532:65532"
)

// epoch stamps the config, the history and the layer's file, so a build is reproducible.
var epoch = time.Unix(0, 0).UTC()

// elfMachines are the architectures the binary is checked against.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

func main() {
	binary := flag.String("binary", "", "the static linux binary to put at "+binaryPath)
	ref := flag.String("name", "", "the image's name and tag, as the Deployment names it (e.g. ghcr.io/trainyard/trainyard:dev)")
	arch := flag.String("arch", "", "the binary's GOARCH (the image's platform is linux/GOARCH)")
	out := flag.String("o", "", "the tarball to write")
	flag.Parse()
	if *binary == "" || *ref == "" || *arch == "" || *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*binary, *ref, *arch, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(binary, ref, arch, out string) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image name %q: %w (give a registry/repository:tag)", ref, err)
	}
	if err := checkStatic(binary, arch); err != nil {
		return err
	}
	img, err := build(binary, arch)
	if err != nil {
		return err
	}
	if err := validate.Image(img); err != nil {
		return fmt.Errorf("the built image does not hold together: %w", err)
	}
	tmp := out + ".tmp"
	if err := writeArchive(tmp, img, tag); err != nil {
		os.Remove(tmp)
		return err
	}
	// Read it back the way a Docker-archive reader does, and check every digest again.
	back, err := tarball.ImageFromPath(tmp, &tag)
	if err == nil {
		err = validate.Image(back)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("reading back %s: %w", tmp, err)
	}
	return os.Rename(tmp, out)
}

// checkStatic refuses a binary that a scratch image cannot run: not ELF, another architecture,
// or dynamically linked (an interpreter such as ld-linux that scratch does not have).
func checkStatic(bin, arch string) error {
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("architecture %q is not one of the known ones (amd64, arm64, ppc64le, s390x, riscv64)", arch)
	}
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("%s: %w (the image needs a linux binary: GOOS=linux)", bin, err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("%s is built for %s, not %s", bin, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; scratch has no loader (build with CGO_ENABLED=0)", bin)
		}
	}
	return nil
}

// build makes the scratch image: one gzip layer with the binary, root-owned and mode 0755 (the
// process runs as 65532, so it can run its binary but not change it), and the config.
func build(binary, arch string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(binaryPath, "/"),
		Mode:     0o755,
		Size:     int64(len(data)),
		ModTime:  epoch,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := layerTar.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}

	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: bareLayer{layer},
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: "hack/ociimage: " + binaryPath,
			Comment:   "the static trainyard binary",
		},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = arch
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{binaryPath}
	cfg.Config.User = user
	return mutate.ConfigFile(img, cfg)
}

// bareLayer hides the tarball layer's own descriptor, whose empty (not absent) annotations map
// makes the manifest in memory differ from the one serialised, which validate.Image refuses.
type bareLayer struct{ v1.Layer }

// writeArchive writes img as an OCI image layout tarball with a Docker manifest.json beside it.
func writeArchive(out string, img v1.Image, tag name.Tag) error {
	files := map[string][]byte{}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	// add stores a blob under its digest, which is how every reader finds it.
	add := func(b []byte) v1.Hash {
		h, _, _ := v1.SHA256(bytes.NewReader(b)) // reading from memory does not fail
		files[blob(h)] = b
		return h
	}

	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	manifestDigest, configDigest := add(manifest), add(config)
	var layerPaths []string
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		layerPaths = append(layerPaths, blob(add(b)))
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	index := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1,
			Digest:    manifestDigest,
			Size:      int64(len(manifest)),
			Platform:  &v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture},
			Annotations: map[string]string{
				// containerd (and so Docker's containerd store, kind and podman) names the image
				// from the first; the OCI spec's own annotation holds the tag.
				"io.containerd.image.name":          tag.String(),
				"org.opencontainers.image.ref.name": tag.TagStr(),
			},
		}},
	}
	if files["index.json"], err = json.Marshal(index); err != nil {
		return err
	}
	files["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	docker := []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blob(configDigest), RepoTags: []string{tag.String()}, Layers: layerPaths}}
	if files["manifest.json"], err = json.Marshal(docker); err != nil {
		return err
	}

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = writeTar(tw, files)
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeTar writes the files and their folders in name order, with fixed owners and times.
func writeTar(tw *tar.Writer, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	dirs := map[string]bool{}
	for n := range files {
		names = append(names, n)
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		names = append(names, d+"/")
	}
	sort.Strings(names)
	for _, n := range names {
		hdr := &tar.Header{Name: n, ModTime: epoch, Format: tar.FormatPAX}
		if strings.HasSuffix(n, "/") {
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
		} else {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(files[n]))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	return nil
}
