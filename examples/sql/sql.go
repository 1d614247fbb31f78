// Package sql holds the Flink SQL job files of the examples, embedded so
// that the demos run the very files the docs show (weir demo broker runs
// BrokerClicks).
package sql

import _ "embed"

// BrokerClicks is broker_clicks.sql: clicks per ad per minute, read from
// a Kafka topic (weir broker or any Kafka cluster).
//
//go:embed broker_clicks.sql
var BrokerClicks string
