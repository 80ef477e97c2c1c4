package render

import (
	"path"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// TensorBoardLogRoot is where the log volumes are mounted in the TensorBoard container.
const TensorBoardLogRoot = "/t9k/logs"

// TensorBoardName is the name of the TensorBoard Deployment and Service of job J: J-tensorboard.
func TensorBoardName(job string) string { return job + "-tensorboard" }

// tensorBoard renders a Deployment running TensorBoard on port 6006 over the job's logs, the
// claims mounted read-only, and a Service in front of it. Its pods carry LabelTensorBoard rather
// than the owner labels, so the job's headless Service and counts leave them out.
func tensorBoard(j *Job) *TensorBoard {
	spec := j.TensorBoard
	name := TensorBoardName(j.Name)
	selector := map[string]string{batch.LabelTensorBoard: j.Name}
	labels := jobLabels(j)
	labels[batch.LabelTensorBoard] = j.Name

	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	claims := map[string]bool{}
	mount := func(claim string) {
		if claims[claim] {
			return
		}
		claims[claim] = true
		vol := "logs-" + strconv.Itoa(len(volumes))
		volumes = append(volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: TensorBoardLogRoot + "/" + claim, ReadOnly: true})
	}
	var dirs []string
	if spec.LogDir != nil {
		for _, pvc := range spec.LogDir.PVC {
			mount(pvc.Name)
			if len(pvc.SubPath) == 0 {
				dirs = append(dirs, pvc.Name)
			}
			for _, sub := range pvc.SubPath {
				dirs = append(dirs, pvc.Name+"/"+withinClaim(sub))
			}
		}
	}
	for _, uri := range spec.TrainingLogFilesets {
		claim, dir := parseFileset(string(uri))
		mount(claim)
		dirs = append(dirs, strings.TrimSuffix(claim+"/"+dir, "/"))
	}
	args := []string{"--bind_all", "--port=" + strconv.Itoa(int(TensorBoardPort))}
	if len(dirs) == 1 {
		args = append(args, "--logdir="+TensorBoardLogRoot+"/"+dirs[0])
	} else {
		named := make([]string, len(dirs))
		for i, d := range dirs {
			named[i] = d + ":" + TensorBoardLogRoot + "/" + d
		}
		args = append(args, "--logdir_spec="+strings.Join(named, ","))
	}

	podSecurity, containerSecurity := tensorBoardSecurity(j)
	meta := metav1.ObjectMeta{
		Name:            name,
		Namespace:       j.Namespace,
		Labels:          labels,
		OwnerReferences: []metav1.OwnerReference{ownerRef(j)},
	}
	port := corev1.ContainerPort{Name: "http", ContainerPort: TensorBoardPort, Protocol: corev1.ProtocolTCP}
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{
					SecurityContext: podSecurity,
					Containers: []corev1.Container{{
						Name:            "tensorboard",
						Image:           spec.Image,
						Command:         []string{"tensorboard"},
						Args:            args,
						Ports:           []corev1.ContainerPort{port},
						Resources:       *spec.Resources.DeepCopy(),
						VolumeMounts:    mounts,
						SecurityContext: containerSecurity,
					}},
					Volumes: volumes,
				},
			},
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: TensorBoardPort, TargetPort: intstr.FromString("http"),
			}},
		},
	}
	return &TensorBoard{Deployment: deploy, Service: svc}
}

// parseFileset splits t9k://pvc/<claim>/<path> into the claim and the path within it.
// Admission has checked the form.
func parseFileset(uri string) (claim, dir string) {
	rest := strings.TrimPrefix(uri, "t9k://pvc/")
	claim, dir, _ = strings.Cut(rest, "/")
	return claim, withinClaim(dir)
}

// withinClaim is a folder of a claim as TensorBoard reads it: without leading or trailing
// slashes, and cleaned from the claim's root, so that '..' never climbs out of the claim's mount
// into the container or another claim. Note: admission refuses '..'; this guards jobs admitted
// before that rule, and manifests `trainyard render -f` reads.
func withinClaim(dir string) string {
	return strings.Trim(path.Clean("/"+dir), "/")
}

// tensorBoardSecurity is the TensorBoard's security context: the one the leader's pods run under
// (its template's pod securityContext, and its training container's), so that TensorBoard reads
// the logs as the training wrote them and is admitted wherever the training is: in a namespace
// that enforces Pod Security restricted, a template that meets it gives a TensorBoard that meets
// it. Left out is what TensorBoard must not inherit or does not need: sysctls, privileged, added
// capabilities, a proc mount, a read-only root filesystem (TensorBoard writes to /tmp). A
// template without one gives a TensorBoard without one, running as its image says.
func tensorBoardSecurity(j *Job) (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	if len(j.Replicas) == 0 {
		return nil, nil
	}
	leader := j.replicaType(j.leaderType())
	if leader.Template == nil {
		return nil, nil
	}
	var pod *corev1.PodSecurityContext
	if psc := leader.Template.Spec.SecurityContext; psc != nil {
		pod = psc.DeepCopy()
		pod.Sysctls = nil
		if equality.Semantic.DeepEqual(pod, &corev1.PodSecurityContext{}) {
			pod = nil
		}
	}
	c := j.templateContainer(leader)
	if c == nil || c.SecurityContext == nil {
		return pod, nil
	}
	from := c.SecurityContext
	sc := &corev1.SecurityContext{
		RunAsUser:                from.RunAsUser,
		RunAsGroup:               from.RunAsGroup,
		RunAsNonRoot:             from.RunAsNonRoot,
		AllowPrivilegeEscalation: from.AllowPrivilegeEscalation,
		SeccompProfile:           from.SeccompProfile,
		AppArmorProfile:          from.AppArmorProfile,
		SELinuxOptions:           from.SELinuxOptions,
		WindowsOptions:           from.WindowsOptions,
	}
	if from.Capabilities != nil && len(from.Capabilities.Drop) > 0 {
		sc.Capabilities = &corev1.Capabilities{Drop: from.Capabilities.Drop}
	}
	sc = sc.DeepCopy()
	if equality.Semantic.DeepEqual(sc, &corev1.SecurityContext{}) {
		return pod, nil
	}
	return pod, sc
}
