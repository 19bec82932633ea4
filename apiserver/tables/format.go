package tables

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Placeholders kubectl users recognise.
const (
	none    = "<none>"
	unset   = "<unset>"
	unknown = "<unknown>"
	pending = "<pending>"
)

var (
	objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()
	containerDoc  = "Names of each container in the template."
	imagesDoc     = "Images referenced by each container in the template."
)

// Column constructors. Priority 1 marks a column kubectl shows only with
// -o wide.
func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDoc["creationTimestamp"]}
}

func column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

func wideColumn(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description, Priority: 1}
}

// age is the time since t as Kubernetes prints it ("5m", "3d4h").
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return unknown
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return unknown
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// containerCells lists container names and images, comma separated, for the
// wide CONTAINERS and IMAGES columns.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	im := make([]string, len(containers))
	for i, c := range containers {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// selectorString renders a label selector as kubectl does ("<none>" when
// empty, "<error>" when it does not parse).
func selectorString(sel *metav1.LabelSelector) string {
	return metav1.FormatLabelSelector(sel)
}

func boolPtrString(v *bool) string {
	if v == nil {
		return unset
	}
	if *v {
		return "True"
	}
	return "False"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// firstFew joins up to limit entries and summarises the rest as
// "a,b,c + 2 more...", the way Kubernetes shortens endpoint lists.
func firstFew(list []string, total, limit int) string {
	s := strings.Join(list, ",")
	if total > limit {
		return fmt.Sprintf("%s + %d more...", s, total-limit)
	}
	return s
}
