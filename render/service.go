package render

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// service renders the job's one headless Service J. With the pods' hostname J-<type>-<index>
// and subdomain J, every replica resolves as J-<type>-<index>.J, before it is ready
// (publishNotReadyAddresses): the rendezvous needs the addresses while pods start. One Service
// per job, not per pod.
func service(j *Job) *corev1.Service {
	selector := jobLabels(j)
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            j.Name,
			Namespace:       j.Namespace,
			Labels:          jobLabels(j),
			OwnerReferences: []metav1.OwnerReference{ownerRef(j)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 selector,
			Ports:                    servicePortsOf(j, j.Replicas),
		},
	}
}

// servicePortsOf are the ports the pods of types serve: each training container's declared ports, and the
// port the environment contract points at for each replica type (the container port named pytorch
// or tensorflow, else the framework's default), each port once.
func servicePortsOf(j *Job, types []ReplicaType) []corev1.ServicePort {
	var ports []corev1.ServicePort
	seen := map[string]bool{}
	names := map[string]bool{}
	add := func(name string, proto corev1.Protocol, port int32) {
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		key := string(proto) + "/" + strconv.Itoa(int(port))
		if seen[key] {
			return
		}
		if name == "" || names[name] {
			name = strings.ToLower(string(proto)) + "-" + strconv.Itoa(int(port))
		}
		seen[key], names[name] = true, true
		ports = append(ports, corev1.ServicePort{Name: name, Protocol: proto, Port: port, TargetPort: intstr.FromInt32(port)})
	}
	name, def := j.trainingPort()
	for ti := range types {
		c := j.templateContainer(&types[ti])
		if c == nil {
			continue
		}
		for _, p := range c.Ports {
			add(p.Name, p.Protocol, p.ContainerPort)
		}
		add(name, corev1.ProtocolTCP, containerPort(c, name, def))
	}
	return ports
}
