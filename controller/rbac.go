package controller

// The permissions the operator needs, and no more; `make manifests` turns them into
// kustomize/rbac/role.yaml. Pods are created (POST) and deleted, never updated; the Service,
// Deployment and PodGroup are written by server-side apply (patch, and create when the apply
// creates); jobs are only read, their status patched, and their finalizers updated (owner
// references with blockOwnerDeletion need it). Nodes are only read (their Ready condition says
// when a node's pods are lost). PodGroups are read uncached (get only). A T9k job under Kueue has
// a Workload, created, patched (spec.active and status, by merge patch) and deleted;
// ResourceFlavors and priority classes are only read. CRDs and APIServices are watched for their
// names only (which PodGroup kinds and versions are served). No Secrets, ConfigMaps or
// cluster-scoped writes. The e2e suite runs the operator under exactly this role (a ServiceAccount
// token), and checks `kubectl auth can-i --list` against e2e/testdata/rbac-can-i.txt.
//
// +kubebuilder:rbac:groups=batch.tensorstack.dev,resources=pytorchtrainingjobs;tensorflowtrainingjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch.tensorstack.dev,resources=pytorchtrainingjobs/status;tensorflowtrainingjobs/status,verbs=get;patch
// +kubebuilder:rbac:groups=batch.tensorstack.dev,resources=pytorchtrainingjobs/finalizers;tensorflowtrainingjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=scheduler.tensorstack.dev;scheduling.volcano.sh;scheduling.x-k8s.io,resources=podgroups,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=workloads;podgroups,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;workloadpriorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
