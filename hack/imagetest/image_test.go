//go:build image

// Package imagetest checks the image tarball `make image` writes, reading it as a loader would:
// the OCI layout's index, manifest, config and layers (every blob against its digest), and the
// Docker manifest.json beside them. Run by `make test-image`, which passes IMAGE_TAR, IMAGE (the
// name the Deployment uses) and IMAGE_ARCH.
package imagetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The contract with kustomize/manager/manager.yaml and the Dockerfile.
const (
	entrypoint = "/trainyard"
	// runAsNonRoot can only be checked against a numeric user.
	user = "65532:65532"
	uid  = 65532
	gid  = 65532
)

// shells are names that must not be anywhere in the image: with none, `kubectl exec` has nothing
// to run and a compromised process has no shell to start.
var shells = []string{"sh", "ash", "bash", "dash", "zsh", "ksh", "busybox"}

var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "ppc64le": elf.EM_PPC64,
	"s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string   `json:"User"`
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// file is one entry of an image layer.
type file struct {
	hdr  *tar.Header
	data []byte
}

func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set; run `make test-image`", name)
	}
	return v
}

func TestImageTarball(t *testing.T) {
	tarPath, wantName, wantArch := env(t, "IMAGE_TAR"), env(t, "IMAGE"), env(t, "IMAGE_ARCH")
	entries := readTar(t, tarPath)

	var layout struct {
		Version string `json:"imageLayoutVersion"`
	}
	decode(t, "oci-layout", entries["oci-layout"].data, &layout)
	if layout.Version != "1.0.0" {
		t.Errorf("oci-layout: imageLayoutVersion %q, want 1.0.0", layout.Version)
	}

	// The OCI side: index.json names exactly one image manifest, for the platform asked for.
	var index struct {
		SchemaVersion int          `json:"schemaVersion"`
		Manifests     []descriptor `json:"manifests"`
	}
	decode(t, "index.json", entries["index.json"].data, &index)
	if index.SchemaVersion != 2 || len(index.Manifests) != 1 {
		t.Fatalf("index.json: schemaVersion %d with %d manifests, want 2 with 1", index.SchemaVersion, len(index.Manifests))
	}
	md := index.Manifests[0]
	if md.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("index.json: manifest media type %q", md.MediaType)
	}
	if got := md.Annotations["io.containerd.image.name"]; got != wantName {
		t.Errorf("index.json: io.containerd.image.name %q, want %q (the Deployment's image)", got, wantName)
	}
	if got, want := md.Annotations["org.opencontainers.image.ref.name"], wantName[strings.LastIndex(wantName, ":")+1:]; got != want {
		t.Errorf("index.json: org.opencontainers.image.ref.name %q, want the tag %q", got, want)
	}
	if md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture != wantArch {
		t.Errorf("index.json: platform %+v, want linux/%s", md.Platform, wantArch)
	}

	var manifest struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}
	decode(t, "the image manifest", blob(t, entries, md), &manifest)
	if manifest.SchemaVersion != 2 || manifest.MediaType != md.MediaType {
		t.Errorf("manifest: schemaVersion %d, media type %q", manifest.SchemaVersion, manifest.MediaType)
	}
	var cfg imageConfig
	decode(t, "the image config", blob(t, entries, manifest.Config), &cfg)

	// The config: what the kubelet runs, and as whom.
	if !slices.Equal(cfg.Config.Entrypoint, []string{entrypoint}) || len(cfg.Config.Cmd) != 0 {
		t.Errorf("config: Entrypoint %q, Cmd %q; want Entrypoint [%s] and no Cmd (the Deployment gives the args)",
			cfg.Config.Entrypoint, cfg.Config.Cmd, entrypoint)
	}
	if cfg.Config.User != user {
		t.Errorf("config: User %q, want %q (numeric, non-root)", cfg.Config.User, user)
	}
	if cfg.OS != "linux" || cfg.Architecture != wantArch {
		t.Errorf("config: platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, wantArch)
	}
	if cfg.RootFS.Type != "layers" || len(cfg.RootFS.DiffIDs) != len(manifest.Layers) || len(manifest.Layers) == 0 {
		t.Fatalf("config: rootfs %s with %d diff_ids for %d layers", cfg.RootFS.Type, len(cfg.RootFS.DiffIDs), len(manifest.Layers))
	}

	// The layers, applied in order (a later entry replaces an earlier one of the same path).
	fs := map[string]file{}
	for i, ld := range manifest.Layers {
		layer := blob(t, entries, ld)
		if strings.HasSuffix(ld.MediaType, "+gzip") {
			zr, err := gzip.NewReader(bytes.NewReader(layer))
			if err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
			if layer, err = io.ReadAll(zr); err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
		} else if ld.MediaType != "application/vnd.oci.image.layer.v1.tar" {
			t.Fatalf("layer %d: media type %q is neither tar nor tar+gzip", i, ld.MediaType)
		}
		if got := sha256Digest(layer); got != cfg.RootFS.DiffIDs[i] {
			t.Errorf("layer %d: uncompressed digest %s, config's diff_id %s", i, got, cfg.RootFS.DiffIDs[i])
		}
		for name, f := range readTar(t, bytes.NewReader(layer)) {
			fs["/"+path.Clean(strings.TrimPrefix(name, "/"))] = f
		}
	}

	bin, ok := fs[entrypoint]
	if !ok {
		t.Fatalf("no layer holds the entrypoint %s; the image holds %q", entrypoint, sortedKeys(fs))
	}
	if bin.hdr.Typeflag != tar.TypeReg {
		t.Errorf("%s: tar type %q, want a regular file", entrypoint, bin.hdr.Typeflag)
	}
	if !executableBy(bin.hdr, uid, gid) {
		t.Errorf("%s: mode %o owned %d:%d, which %s cannot execute", entrypoint, bin.hdr.Mode, bin.hdr.Uid, bin.hdr.Gid, user)
	}
	checkStatic(t, bin.data, wantArch)

	for name, f := range fs {
		if slices.Contains(shells, path.Base(name)) {
			t.Errorf("the image holds a shell: %s", name)
		}
		if name != entrypoint && f.hdr.Typeflag != tar.TypeDir {
			t.Errorf("the image holds %s besides the binary; scratch + the binary is the contract (add it here and to the Dockerfile if it belongs)", name)
		}
	}

	// The Docker side: manifest.json names the same config and layers, under the Deployment's name.
	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	decode(t, "manifest.json", entries["manifest.json"].data, &docker)
	if len(docker) != 1 {
		t.Fatalf("manifest.json: %d images, want 1", len(docker))
	}
	if !slices.Equal(docker[0].RepoTags, []string{wantName}) {
		t.Errorf("manifest.json: RepoTags %q, want [%s]", docker[0].RepoTags, wantName)
	}
	if docker[0].Config != blobPath(manifest.Config.Digest) {
		t.Errorf("manifest.json: Config %s, the OCI manifest's config is %s", docker[0].Config, manifest.Config.Digest)
	}
	var layerPaths []string
	for _, ld := range manifest.Layers {
		layerPaths = append(layerPaths, blobPath(ld.Digest))
	}
	if !slices.Equal(docker[0].Layers, layerPaths) {
		t.Errorf("manifest.json: Layers %q, the OCI manifest's are %q", docker[0].Layers, layerPaths)
	}
}

// readTar reads every entry of a tar (a path or a reader), refusing a name given twice.
func readTar(t *testing.T, src any) map[string]file {
	t.Helper()
	var r io.Reader
	switch s := src.(type) {
	case string:
		f, err := os.Open(s)
		if err != nil {
			t.Fatalf("%v (make image writes it)", err)
		}
		defer f.Close()
		r = f
	case io.Reader:
		r = s
	}
	out := map[string]file{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading tar: %v", err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")
		if _, dup := out[name]; dup {
			t.Errorf("tar: %s is in it twice", name)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		out[name] = file{hdr: hdr, data: data}
	}
}

// blob returns a blob of the layout, failing unless its size and sha256 are the descriptor's.
func blob(t *testing.T, entries map[string]file, d descriptor) []byte {
	t.Helper()
	f, ok := entries[blobPath(d.Digest)]
	if !ok {
		t.Fatalf("blob %s (%s) is not in the tarball", d.Digest, d.MediaType)
	}
	if int64(len(f.data)) != d.Size {
		t.Errorf("blob %s: %d bytes, descriptor says %d", d.Digest, len(f.data), d.Size)
	}
	if got := sha256Digest(f.data); got != d.Digest {
		t.Errorf("blob %s: content digest is %s", d.Digest, got)
	}
	return f.data
}

func blobPath(digest string) string { return "blobs/" + strings.Replace(digest, ":", "/", 1) }

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func decode(t *testing.T, what string, data []byte, v any) {
	t.Helper()
	if data == nil {
		t.Fatalf("%s is missing", what)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// executableBy applies the permission bits a kernel would for a process of uid:gid (not root).
func executableBy(h *tar.Header, uid, gid int) bool {
	switch {
	case h.Uid == uid:
		return h.Mode&0o100 != 0
	case h.Gid == gid:
		return h.Mode&0o010 != 0
	default:
		return h.Mode&0o001 != 0
	}
}

// checkStatic fails unless data is an ELF executable for arch with no program interpreter: a
// dynamically linked binary would find no loader in a scratch image.
func checkStatic(t *testing.T, data []byte, arch string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s is not an ELF binary: %v", entrypoint, err)
		return
	}
	if want, ok := elfMachines[arch]; !ok || f.Machine != want {
		t.Errorf("%s is built for %s; the image is %s", entrypoint, f.Machine, arch)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		t.Errorf("%s: ELF type %s is not an executable", entrypoint, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (it asks for a loader); build it with CGO_ENABLED=0", entrypoint)
		}
	}
}

func sortedKeys(m map[string]file) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
