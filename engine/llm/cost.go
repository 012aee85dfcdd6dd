package llm

// Price is a model's price in USD per one million tokens.
type Price struct {
	Input  float64 `json:"input" yaml:"input"`
	Output float64 `json:"output" yaml:"output"`
}

// Prices maps a model name to its price. Prices are configuration, not code:
// they change more often than this package does.
type Prices map[string]Price

// Cost is the USD cost of the tokens at model's price, or 0 when the model
// has no price. The second result says whether a price was found.
func (p Prices) Cost(model string, inputTokens, outputTokens int64) (float64, bool) {
	price, ok := p[model]
	if !ok {
		return 0, false
	}
	return (float64(inputTokens)*price.Input + float64(outputTokens)*price.Output) / 1e6, true
}
