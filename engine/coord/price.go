package coord

// Price is a model's price in USD per one million tokens. It is
// configuration (config's prices:), not code: prices change more often than
// this package does.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
}

// Cost is the USD cost of the tokens at this price.
func (p Price) Cost(inputTokens, outputTokens int64) float64 {
	return (float64(inputTokens)*p.Input + float64(outputTokens)*p.Output) / 1e6
}
