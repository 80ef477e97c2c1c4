package render

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

func TestRestartBackoffDoublesFromTheSecondRestartUpToItsMax(t *testing.T) {
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for restarts, w := range want {
		if got := restartBackoff(int32(restarts)); got != w {
			t.Errorf("restartBackoff(%d) = %s; want %s", restarts, got, w)
		}
	}
	if got := restartBackoff(1 << 30); got != RestartBackoffMax {
		t.Errorf("restartBackoff(2^30) = %s; want %s", got, RestartBackoffMax)
	}
}

// TemplateHash is what an edit of a replica's template is told by: an edit the pods would show
// changes it; what render replaces on every pod, unset fields, and map order do not.
func TestTemplateHashChangesWithWhatThePodsGet(t *testing.T) {
	base := func() *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "pytorch", Image: "example/train:1", Command: []string{"python", "train.py"}, Args: []string{"--lr", ""},
				Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
			}}},
		}
	}
	// Pinned: a change of the hashing would end every back-off held across an operator upgrade
	// (docs/design.md). Change it only knowingly.
	const pinned = "62084e292078a27a52ce"
	if got := TemplateHash(base()); got != pinned {
		t.Errorf("TemplateHash of the base template = %s; want %s", got, pinned)
	}
	same := map[string]func(*corev1.PodTemplateSpec){
		"restartPolicy, which render replaces with Never": func(p *corev1.PodTemplateSpec) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
		"an operator label":      func(p *corev1.PodTemplateSpec) { p.Labels[batch.LabelOwnerName] = "other" },
		"an operator annotation": func(p *corev1.PodTemplateSpec) { p.Annotations[batch.AnnotationGangRestarts] = "7" },
		"empty lists and maps set": func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes = []corev1.Volume{}
			p.Spec.NodeSelector = map[string]string{}
		},
		"an empty security context": func(p *corev1.PodTemplateSpec) { p.Spec.SecurityContext = &corev1.PodSecurityContext{} },
	}
	for what, edit := range same {
		p := base()
		edit(p)
		if got := TemplateHash(p); got != pinned {
			t.Errorf("%s changed the hash: %s", what, got)
		}
	}
	differ := map[string]func(*corev1.PodTemplateSpec){
		"the image":                     func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "example/train:2" },
		"the command":                   func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Command[1] = "fixed.py" },
		"an argument left empty":        func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Args = p.Spec.Containers[0].Args[:1] },
		"an environment variable":       func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Env[0].Value = "2" },
		"a label the pods get":          func(p *corev1.PodTemplateSpec) { p.Labels["team"] = "b" },
		"an annotation the pods get":    func(p *corev1.PodTemplateSpec) { p.Annotations["note"] = "y" },
		"automountServiceAccountToken":  func(p *corev1.PodTemplateSpec) { p.Spec.AutomountServiceAccountToken = ptr(false) },
		"terminationGracePeriodSeconds": func(p *corev1.PodTemplateSpec) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(0)) },
	}
	seen := map[string]string{pinned: "the base"}
	for what, edit := range differ {
		p := base()
		edit(p)
		got := TemplateHash(p)
		if prev, ok := seen[got]; ok {
			t.Errorf("%s gives the hash of %s: %s", what, prev, got)
		}
		seen[got] = what
	}
}
