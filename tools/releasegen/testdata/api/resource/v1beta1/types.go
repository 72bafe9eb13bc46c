package v1beta1

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WidgetSpec `json:"spec"`

	Status WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	// Size is a named string type.
	Size WidgetSize `json:"size"`

	// +optional
	// +featureGate=DRAWidgets,SharedThings
	Parts []Part `json:"parts,omitempty"`

	Labels map[QualifiedName]*Part `json:"labels,omitempty"`

	Amount *resource.Quantity `json:"amount,omitempty"`

	Nodes *v1.NodeSelector `json:"nodes,omitempty"`

	Config `json:",inline"`

	Ignored string `json:"-"`

	internal string
}

type Config struct {
	// +featureGate=DRAGadgets
	Opaque *string `json:"opaque,omitempty"`
}

type Part struct {
	Name  string `json:"name"`
	Count int64  `json:"count,omitempty"`
}

type WidgetStatus struct {
	Ready bool `json:"ready"`
}

type WidgetSize string

type QualifiedName string

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

type WidgetClass struct {
	metav1.TypeMeta   `json:""`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetClassSpec `json:"spec"`
}

type WidgetClassSpec struct {
	Driver string `json:"driver"`
}

const DRAAdminNamespaceLabelKey = "widgets.example.com/admin-v1beta1"
