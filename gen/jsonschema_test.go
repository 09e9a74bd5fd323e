package gen

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type schemaPoint struct {
	X, Y float64
}

type schemaTool struct {
	ID     string    `xml:"id,attr" doc:"the id"`
	Mode   string    `enum:"fast|slow"`
	Limit  *int64    `xml:",omitempty" doc:"at most" jsonschema:"{\"default\":10,\"minimum\":0}"`
	Small  int8      `xml:",omitempty"`
	Count  uint16    `xml:",omitempty"`
	When   time.Time `xml:",omitempty"`
	Blob   []byte    `xml:",omitempty"`
	Tags   []string  `xml:"Tags>Tag" jsonschema:"{\"minItems\":1,\"maxItems\":3}"`
	Points []schemaPoint
	Where  *schemaPoint
	Filter *string `xml:",omitempty" encoding:"json" jsonschema:"{\"type\":\"object\"}"`
}

func TestJSONSchema(t *testing.T) {
	ty, err := Describe(reflect.TypeFor[schemaTool]())
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(JSONSchema(ty))
	if err != nil {
		t.Fatal(err)
	}
	point := `{"additionalProperties":false,"properties":{"X":{"type":"number"},"Y":{"type":"number"}},"required":["X","Y"],"type":"object"}`
	want := `{"additionalProperties":false,"properties":{` +
		`"Blob":{"contentEncoding":"base64","type":"string"},` +
		`"Count":{"maximum":65535,"minimum":0,"type":"integer"},` +
		`"Filter":{"type":"object"},` +
		`"Limit":{"default":10,"description":"at most","minimum":0,"type":"integer"},` +
		`"Mode":{"enum":["fast","slow"],"type":"string"},` +
		`"Points":{"items":` + point + `,"type":"array"},` +
		`"Small":{"maximum":127,"minimum":-128,"type":"integer"},` +
		`"Tags":{"items":{"type":"string"},"maxItems":3,"minItems":1,"type":"array"},` +
		`"When":{"format":"date-time","type":"string"},` +
		`"Where":` + point + `,` +
		`"id":{"description":"the id","type":"string"}},` +
		`"required":["id","Mode"],"type":"object"}`
	if string(got) != want {
		t.Fatalf("JSONSchema:\n got %s\nwant %s", got, want)
	}
	// Fresh maps: changing one result leaves the next alone.
	s := JSONSchema(ty)
	s["properties"].(map[string]any)["Mode"].(map[string]any)["enum"].([]string)[0] = "changed"
	if again, _ := json.Marshal(JSONSchema(ty)); string(again) != want {
		t.Fatal("JSONSchema shares state between calls")
	}
}

func TestJSONSchemaRootKeywords(t *testing.T) {
	type Root struct {
		XMLName xml.Name `xml:"Root" jsonschema:"{\"required\":[\"A\",\"B\"],\"description\":\"d\"}"`
		A       []string
		B       string
	}
	ty, err := Describe(reflect.TypeFor[Root]())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(JSONSchema(ty))
	want := `{"additionalProperties":false,"description":"d","properties":{"A":{"items":{"type":"string"},"type":"array"},"B":{"type":"string"}},"required":["A","B"],"type":"object"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestJSONTagsRefused(t *testing.T) {
	for name, typ := range map[string]reflect.Type{
		"encoding on int": reflect.TypeFor[struct {
			A int `encoding:"json"`
		}](),
		"unknown encoding": reflect.TypeFor[struct {
			A string `encoding:"yaml"`
		}](),
		"encoding on slice": reflect.TypeFor[struct {
			A []string `encoding:"json"`
		}](),
		"schema not object": reflect.TypeFor[struct {
			A string `jsonschema:"[1]"`
		}](),
		"schema not JSON": reflect.TypeFor[struct {
			A string `jsonschema:"{minimum: 1}"`
		}](),
	} {
		_, err := Describe(reflect.StructOf([]reflect.StructField{{Name: "XMLName", Type: reflect.TypeFor[xml.Name](),
			Tag: `xml:"T"`}, typ.Field(0)}))
		if !errors.Is(err, ErrUnsupported) || !(strings.Contains(err.Error(), "encoding") || strings.Contains(err.Error(), "jsonschema")) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
