// Package kernel is what every domain of Herald builds on: the named refusals
// (DomainError, declared once and answered by one presenter), a field's validation
// failure (FieldError), the checks on text every domain shares, and the mapping of the
// database's errors onto those names.
package kernel
