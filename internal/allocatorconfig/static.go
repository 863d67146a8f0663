package allocatorconfig

import "errors"

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
	} else {
		*s = StaticCollector{Name: name}
	}
	if s.Name == "" {
		return errors.New("collectors: an entry has no name")
	}
	return nil
}
