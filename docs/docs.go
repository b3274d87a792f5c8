// Package docs holds the documents Herald serves as well as ships: the OpenAPI
// description of the JSON API.
package docs

import _ "embed"

// OpenAPI is the OpenAPI 3.1 description of /api/v1, served at /api/v1/openapi.json and
// rendered on the console's API page. The API tests check every answer they receive
// against it.
//
//go:embed openapi.json
var OpenAPI []byte
