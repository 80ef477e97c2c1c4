package controller

// The permissions the operator needs; `make manifests` turns them into kustomize/rbac/role.yaml.
//
// +kubebuilder:rbac:groups=batch.tensorstack.dev,resources=pytorchtrainingjobs;tensorflowtrainingjobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=batch.tensorstack.dev,resources=pytorchtrainingjobs/status;tensorflowtrainingjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=batch.tensorstack.dev,resources=pytorchtrainingjobs/finalizers;tensorflowtrainingjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduler.tensorstack.dev;scheduling.volcano.sh;scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
