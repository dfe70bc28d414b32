package privacy

import (
	"testing"
)

// Values written in a script without letter case inside text of a cased
// script: the sentences are written for these tests.
var caselessCases = []embeddedCase{
	{"Dinner with 김민수 at the hotel in 부산 on Friday.", []string{"PERSON:김민수", "LOCATION:부산", "DATE_TIME:Friday"}},
	{"Please call דוד לוי about the parcel.", []string{"PERSON:דוד לוי"}},
	{"The package for فاطمة الزهراء is at the office in عمان.", []string{"PERSON:فاطمة الزهراء", "LOCATION:عمان"}},
	{"Our guide ნინო met us in ქუთაისი yesterday.", []string{"PERSON:ნინო", "LOCATION:ქუთაისი"}},
	{"The invoice was signed by สมชาย ใจดี last week.", []string{"PERSON:สมชาย ใจดี"}},
	{"Ask राहुल शर्मा about the invoice.", []string{"PERSON:राहुल शर्मा"}},
	{"Mail for Mr. 王伟 goes to the office in 上海.", []string{"PERSON:Mr.", "PERSON:王伟", "LOCATION:上海"}},
	// Street types of these scripts, before the name or after it.
	{"The bins at שדרות רוטשילד 22 were not collected.", []string{"ADDRESS:שדרות רוטשילד 22"}},
	{"Deliver it to რუსთაველის გამზირი 12 by noon.", []string{"ADDRESS:რუსთაველის გამზირი 12"}},
	// An address block under a heading: its lines hold no cased word.
	{"Our new address:\nشارع الملك فهد 45\nالرياض 12271", []string{"ADDRESS:شارع الملك فهد 45\nالرياض 12271"}},
}

// TestCaselessScripts: a name, a place or an address in Hebrew, Arabic,
// Hangul, Georgian, Thai, Devanagari or Han letters among English words is
// found as a capitalised name would be. Before, none of them was an
// anchor (their letters have no upper case) and they passed as text.
func TestCaselessScripts(t *testing.T) {
	checkEmbedded(t, caselessCases)
}

// TestCaselessScriptProse: text written in a caseless script with a
// foreign word in it is not read as names, nor is one letter of an
// alphabet left by a wrong decoding ("ג€“" is an en dash read in the wrong
// code page, common in scraped text).
func TestCaselessScriptProse(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"اشتريت هاتف iPhone جديد من المتجر أمس وكان السعر مرتفعا جدا", nil},
		{"קניתי אתמול iPhone חדש בחנות ליד הבית שלי והמחיר היה גבוה", nil},
		{"오늘 Google 검색으로 맛있는 식당을 찾았는데 사람이 너무 많았다", nil},
		{"어제 Google 검색 결과가 이상했다", nil},
		{"A tribute to Robert Vodir ג€“ sadly, she wasn't impressed.", []string{"PERSON:Robert Vodir"}},
	})
}

// TestMarksInWords: the vowel signs of the Indic scripts (spacing marks)
// and the zero-width non-joiner of Persian are part of the word they are
// written in; before, "राहुल" was cut at its vowel sign.
func TestMarksInWords(t *testing.T) {
	l := theLexicon()
	for text, want := range map[string]int{"राहुल शर्मा": 2, "মাহমুদ": 1, "مهدی\u200cزاده": 1, "สมชาย": 1, "ਗੁਰਪ੍ਰੀਤ": 1} {
		n := 0
		for _, tk := range tokenize(l, text, 0, len(text), nil) {
			if tk.kind != tWord {
				t.Errorf("%q: token %q is no word", text, text[tk.s:tk.e])
			}
			n++
		}
		if n != want {
			t.Errorf("%q: %d tokens, want %d", text, n, want)
		}
	}
}

// TestStreamCaseless: the caseless texts streamed split at every byte,
// and byte by byte, give the one-shot output.
func TestStreamCaseless(t *testing.T) {
	for _, tc := range caselessCases {
		text := tc.text
		want := oneShot(t, text, ModeTokens, NoTypes())
		for i := 0; i <= len(text); i++ {
			if got, _ := streamed(t, text, []int{i}, ModeTokens, NoTypes()); got != want {
				t.Errorf("%q, split at %d:\n got %q\nwant %q", text, i, got, want)
				break
			}
		}
		var splits []int
		for i := 1; i < len(text); i++ {
			splits = append(splits, i)
		}
		if got, _ := streamed(t, text, splits, ModeTokens, NoTypes()); got != want {
			t.Errorf("%q, byte by byte:\n got %q\nwant %q", text, got, want)
		}
	}
}

// TestArmenianStreetTypes: Armenian is cased, but no list held its street
// types, so a street line was read as a name.
func TestArmenianStreetTypes(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The bins at Աբովյան փողոց 12 were not collected.", []string{"ADDRESS:Աբովյան փողոց 12"}},
		{"We moved to Մաշտոցի պողոտա 5 last spring.", []string{"ADDRESS:Մաշտոցի պողոտա 5"}},
	})
}

// TestAddressFormsOfOtherScripts: street lines and postal codes written
// the way of their country, in sentences written for this test: Chinese
// and Japanese numbers marked by the word after them and joined to the
// words around them, Korean road names, the Persian word for the house
// number after a comma, Japanese and Israeli postal codes, and an Indian
// PIN code in two groups after the town and a comma.
func TestAddressFormsOfOtherScripts(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"The parcel goes to 人民路88号, 杭州市 310000 tomorrow.", []string{"ADDRESS:人民路88号, 杭州市 310000"}},
		{"Mail it to 中山北路12號, 台北市 10491 today.", []string{"ADDRESS:中山北路12號, 台北市 10491"}},
		{"Send the forms to 3丁目12番5号, 150-0041 渋谷区 please.", []string{"ADDRESS:3丁目12番5号, 150-0041 渋谷区"}},
		{"Our shop is at 세종대로 110 near the station.", []string{"ADDRESS:세종대로 110"}},
		{"Our shop is at 15 중앙3길 near the station.", []string{"ADDRESS:15 중앙3길"}},
		{"The keys are at خیابان آزادی, پلاک 12 with the porter.", []string{"ADDRESS:خیابان آزادی, پلاک 12"}},
		{"We sent it to רחוב הרצל 10, חיפה 3303215 last week.", []string{"ADDRESS:רחוב הרצל 10, חיפה 3303215"}},
		{"Deliver to 12 Linking Road, Mumbai, 400 050 before Monday.", []string{"ADDRESS:12 Linking Road, Mumbai, 400 050", "DATE_TIME:Monday"}},
	})
	// One Han letter joined to a number counts it ("the third time"): it
	// is no name, and the number no house number.
	checkEmbedded(t, []embeddedCase{
		{"Order 第3回 was shipped.", nil},
	})
}

// TestEircode: an Irish postal code after the town completes the address.
func TestEircode(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Send it to 12 Main Street, Dublin D02 X285 today.", []string{"ADDRESS:12 Main Street, Dublin D02 X285"}},
	})
}

// TestHanPlaceWords: a word of Han letters that ends with the word for a
// division or a settlement (省, 県, 市, 町 …) is a place, not a person,
// without a preposition of place before it; a name of two letters ending
// in 町 stays a person.
func TestHanPlaceWords(t *testing.T) {
	checkEmbedded(t, []embeddedCase{
		{"Our supplier is based near 福建省 and ships weekly.", []string{"LOCATION:福建省"}},
		{"Anna visited 関根町 last year.", []string{"PERSON:Anna", "LOCATION:関根町"}},
		{"The report on 西藏自治区 is late.", []string{"LOCATION:西藏自治区"}},
		{"Dinner with 张伟 and 李娜 tonight.", []string{"PERSON:张伟", "PERSON:李娜"}},
		{"The clinic of 小町 is closed.", []string{"PERSON:小町"}},
	})
}
