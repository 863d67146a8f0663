package crdslim

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The description of Widget's resources field is ours and stays; those of
// corev1.ResourceRequirements' fields go.
func ExampleSlimmer_Slim() {
	s := New(map[schema.GroupVersionKind]reflect.Type{
		{Group: "example.com", Version: "v1", Kind: "Widget"}: reflect.TypeFor[widget](),
	}, "github.com/shardwise/shardwise/internal/crdslim")
	out, err := s.Slim([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              resources:
                description: resources of the widget's pods.
                type: object
                properties:
                  limits:
                    description: Limits describes the maximum amount of compute resources allowed.
                    type: object
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// ---
	// apiVersion: apiextensions.k8s.io/v1
	// kind: CustomResourceDefinition
	// metadata:
	//   name: widgets.example.com
	// spec:
	//   group: example.com
	//   names:
	//     kind: Widget
	//     plural: widgets
	//   scope: Namespaced
	//   versions:
	//   - name: v1
	//     schema:
	//       openAPIV3Schema:
	//         properties:
	//           spec:
	//             properties:
	//               resources:
	//                 description: resources of the widget's pods.
	//                 properties:
	//                   limits:
	//                     type: object
	//                 type: object
	//             type: object
	//         type: object
	//     served: true
	//     storage: true
}
