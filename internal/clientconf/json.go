package clientconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// object is a JSON object that keeps its keys in the order the file has
// them, each value as the file spells it, so an edit changes only what it
// means to.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

// parseObject reads a JSON object; empty input is an empty object.
func parseObject(b []byte) (*object, error) {
	o, err := parseObjectRaw(b)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("the JSON ends early")
	}
	if err != nil {
		return nil, fmt.Errorf("not JSON chock connect can edit: %v", err)
	}
	return o, nil
}

func parseObjectRaw(b []byte) (*object, error) {
	o := &object{vals: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(b)) == 0 {
		return o, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return nil, errors.New("not a JSON object")
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := o.vals[k]; dup {
			return nil, fmt.Errorf("the key %q is there twice", k)
		}
		o.keys = append(o.keys, k)
		o.vals[k] = v
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	return o, nil
}

// child is the object under key, a new one when there is none; an error
// when the key holds something else.
func (o *object) child(key string) (*object, error) {
	v, ok := o.vals[key]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return &object{vals: map[string]json.RawMessage{}}, nil
	}
	c, err := parseObject(v)
	if err != nil {
		return nil, fmt.Errorf("%q is not an object: %v", key, err)
	}
	return c, nil
}

// set puts v under key: in its place when the key is there, last when not.
func (o *object) set(key string, v any) error {
	var raw json.RawMessage
	switch x := v.(type) {
	case *object:
		b, err := x.MarshalJSON()
		if err != nil {
			return err
		}
		raw = b
	case json.RawMessage:
		raw = x
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return err
		}
		raw = bytes.TrimSpace(buf.Bytes())
	}
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = raw
	return nil
}

// strings is the list of strings under key; an error when it holds
// something else.
func (o *object) strings(key string) ([]string, error) {
	v, ok := o.vals[key]
	if !ok {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("%q is not a list of strings", key)
	}
	return out, nil
}

// MarshalJSON writes the object in its key order.
func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// render is the object as a file: two-space indented, ending in a line
// break.
func (o *object) render() ([]byte, error) {
	raw, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// union is list with the items of add it lacks appended, and those added.
func union(list, add []string) (out, added []string) {
	out = append([]string(nil), list...)
	have := map[string]bool{}
	for _, s := range list {
		have[s] = true
	}
	for _, s := range add {
		if !have[s] {
			out = append(out, s)
			added = append(added, s)
			have[s] = true
		}
	}
	return out, added
}
