package gen

import "strconv"

// Kind is the XSD-relevant kind of a field's value (of one item, for repeated
// fields).
type Kind uint8

// The kinds a payload field can have. Each simple kind maps to one XSD built-in
// type (see XSDType); Struct is a nested complex type.
const (
	Invalid Kind = iota // the zero Kind; no valid field has it
	String              // string → xs:string
	Int                 // int → xs:integer
	Int8                // int8 → xs:byte
	Int16               // int16 → xs:short
	Int32               // int32 → xs:int
	Int64               // int64 → xs:long
	Uint                // uint → xs:nonNegativeInteger
	Uint8               // uint8 → xs:unsignedByte
	Uint16              // uint16 → xs:unsignedShort
	Uint32              // uint32 → xs:unsignedInt
	Uint64              // uint64 → xs:unsignedLong
	Float32             // float32 → xs:float
	Float64             // float64 → xs:double
	Bool                // bool → xs:boolean
	Time                // time.Time → xs:dateTime
	Bytes               // []byte → xs:base64Binary
	Struct              // nested struct → complex type
)

var kindXSD = [...]string{
	String:  "xs:string",
	Int:     "xs:integer",
	Int8:    "xs:byte",
	Int16:   "xs:short",
	Int32:   "xs:int",
	Int64:   "xs:long",
	Uint:    "xs:nonNegativeInteger",
	Uint8:   "xs:unsignedByte",
	Uint16:  "xs:unsignedShort",
	Uint32:  "xs:unsignedInt",
	Uint64:  "xs:unsignedLong",
	Float32: "xs:float",
	Float64: "xs:double",
	Bool:    "xs:boolean",
	Time:    "xs:dateTime",
	Bytes:   "xs:base64Binary",
	Struct:  "",
}

// XSDType returns the built-in XSD type name of a simple kind ("xs:string", …),
// or "" for Struct and Invalid.
func (k Kind) XSDType() string {
	if int(k) < len(kindXSD) {
		return kindXSD[k]
	}
	return ""
}

// IsInteger reports whether k is one of the signed or unsigned integer kinds.
func (k Kind) IsInteger() bool { return k >= Int && k <= Uint64 }

// IsUnsigned reports whether k is one of the unsigned integer kinds.
func (k Kind) IsUnsigned() bool { return k >= Uint && k <= Uint64 }

// IsFloat reports whether k is Float32 or Float64.
func (k Kind) IsFloat() bool { return k == Float32 || k == Float64 }

// BitSize returns the width in bits of a numeric kind's Go type (strconv.IntSize
// for Int and Uint), so that parsing with it catches overflow of the Go type.
func (k Kind) BitSize() int {
	switch k {
	case Int8, Uint8:
		return 8
	case Int16, Uint16:
		return 16
	case Int32, Uint32, Float32:
		return 32
	case Int, Uint:
		return strconv.IntSize
	default:
		return 64
	}
}

// String returns the XSD type name, or "struct"/"invalid".
func (k Kind) String() string {
	switch k {
	case Struct:
		return "struct"
	case Invalid:
		return "invalid"
	}
	if s := k.XSDType(); s != "" {
		return s
	}
	return "invalid"
}
