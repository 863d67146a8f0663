package allocatorconfig

import (
	"errors"
	"fmt"
)

// UnmarshalYAML implements yaml.v2's Unmarshaler: an entry of the static
// collector list is either a plain name (`collectors: [collector-0]`) or a
// mapping with a name and a node.
func (s *StaticCollector) UnmarshalYAML(unmarshal func(any) error) error {
	var name string
	if err := unmarshal(&name); err != nil {
		type plain StaticCollector
		if err := unmarshal((*plain)(s)); err != nil {
			return err
		}
		var keys map[string]any
		if err := unmarshal(&keys); err != nil {
			return err
		}
		for k := range keys {
			if k != "name" && k != "node" {
				return fmt.Errorf("collectors: unknown key %q in an entry (known: name, node)", k)
			}
		}
	} else {
		*s = StaticCollector{Name: name}
	}
	if s.Name == "" {
		return errors.New("collectors: an entry has no name")
	}
	return nil
}
