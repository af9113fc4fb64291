package guard_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// A textKind is one kind of text a chat carries, made deterministically
// (each call returns the same text) at about size bytes.
type textKind struct {
	name string
	make func(size int) string
}

// textKinds are the kinds the estimate is checked on. The texts are
// written or generated here: English prose, a chat with markdown, source
// code, JSON (compact and indented), log lines, Chinese, Japanese, Korean,
// other scripts, emoji, numbers, base64, hex ids, URLs and whitespace.
var textKinds = []textKind{
	{"prose", func(n int) string { return cycle(prose, "\n\n", n) }},
	{"chat", func(n int) string { return cycle(chatTurns, "\n\n", n) }},
	{"code-go", func(n int) string { return repoFiles(n, "count.go", "report.go", "metrics.go", "embed.go") }},
	{"code-py-js", func(n int) string { return cycle([]string{pythonCode, jsCode, shellCode}, "\n", n) }},
	{"json", func(n int) string { return jsonRecords(n, false) }},
	{"json-indented", func(n int) string { return jsonRecords(n, true) }},
	{"log-syslog", func(n int) string { return lines(n, syslogLine) }},
	{"log-nginx", func(n int) string { return lines(n, nginxLine) }},
	{"log-app", func(n int) string { return lines(n, appLogLine) }},
	{"chinese", func(n int) string { return cycle(chinese, "\n", n) }},
	{"japanese", func(n int) string { return cycle(japanese, "\n", n) }},
	{"korean", func(n int) string { return cycle(korean, "\n", n) }},
	{"cyrillic", func(n int) string { return cycle(cyrillic, "\n", n) }},
	{"greek", func(n int) string { return cycle(greek, "\n", n) }},
	{"arabic-hebrew", func(n int) string { return cycle(arabicHebrew, "\n", n) }},
	{"hindi-thai", func(n int) string { return cycle(hindiThai, "\n", n) }},
	{"accented", func(n int) string { return cycle(accented, "\n", n) }},
	{"emoji", func(n int) string { return lines(n, emojiLine) }},
	{"numbers", func(n int) string { return lines(n, numberLine) }},
	{"base64", func(n int) string { return base64Text(n) }},
	{"hex-ids", func(n int) string { return lines(n, hexLine) }},
	{"urls", func(n int) string { return lines(n, urlLine) }},
	{"whitespace", func(n int) string { return lines(n, whitespaceLine) }},
	{"markdown-table", func(n int) string { return lines(n, tableLine) }},
	{"html", func(n int) string { return lines(n, htmlLine) }},
	{"sql-csv", func(n int) string { return lines(n, sqlCSVLine) }},
	{"diff", func(n int) string { return cycle([]string{diffText}, "\n", n) }},
	{"stacktrace", func(n int) string { return cycle([]string{javaTrace, goTrace}, "\n", n) }},
}

// cycle joins parts with sep, starting again from the first, until the
// text has about n bytes.
func cycle(parts []string, sep string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(parts[i%len(parts)])
	}
	return b.String()
}

// lines writes line(r) lines, with r seeded the same every call, until the
// text has about n bytes.
func lines(n int, line func(r *rand.Rand) string) string {
	r := rand.New(rand.NewPCG(19, 5))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(line(r))
		b.WriteByte('\n')
	}
	return b.String()
}

// repoFiles reads source files of this package (they are always present)
// until about n bytes.
func repoFiles(n int, names ...string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		data, err := os.ReadFile(names[i%len(names)])
		if err != nil {
			panic(err)
		}
		b.Write(data)
	}
	return b.String()
}

// corpusDocs are the plain-text documents of ../shared/corpus, read from
// the repository's parent folder; absent ones are left out.
func corpusDocs() (map[string]string, []string) {
	docs := map[string]string{}
	var missing []string
	for _, name := range []string{"research-vault/blog_article.txt", "research-vault/personal_notes.md",
		"isolation/public/neural_networks.txt", "isolation/public/quantum_computing.txt",
		"isolation/internal/quarterly_results.txt", "isolation/internal/project_atlas.txt"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "shared", "corpus", name))
		if err != nil {
			missing = append(missing, name)
			continue
		}
		docs[name] = string(data)
	}
	return docs, missing
}

var prose = []string{
	`The bridge over the river had been closed for three weeks, so the morning traffic crept along the old road through the village instead. Nobody minded much at first. The bakery sold out of bread by eight, the post office ran a queue into the street, and the children on their way to school counted the lorries as if they were a parade.`,
	`When the committee finally met, the chairwoman opened with a question nobody had prepared for: what would happen if the repairs took the whole summer? The engineer said the steel had arrived, but the crane that was supposed to lift it was still working on a hospital two towns away, and it could not be moved before July.`,
	`Memory in a long conversation is not free. Every message the assistant has seen is sent again with each new question, and once the history grows past the model's window, something has to give. A careful system says what it left out and keeps it somewhere it can be fetched; a careless one simply forgets, and the user never learns why the answer went wrong.`,
	`She wrote the letter twice. The first version was too polite, full of apologies for things that were not her fault; the second said plainly that the shipment was late, that the invoice was wrong, and that she expected a corrected one by Friday. She sent the second, and felt better than she had in days.`,
	`Photosynthesis turns light, water and carbon dioxide into sugar and oxygen. Most of it happens in the leaves, inside small green bodies called chloroplasts, which hold the pigment that absorbs red and blue light and reflects green. A single large tree can release enough oxygen in a season for several people to breathe.`,
	`"Are you sure this is the right platform?" asked the old man, peering at the board. The clerk checked his watch, then the timetable, then the board again. "It was, sir, until about ten minutes ago. They've moved it to platform nine. If you hurry, you'll still make it — the train's running late as well."`,
	`Good documentation answers the questions a reader actually has, in the order they have them: what is this, should I use it, how do I start, and what do I do when it breaks. Reference tables matter, but they belong after the explanation, not instead of it. A page that only lists options leaves the reader to guess which ones matter.`,
	`The committee's report, published on Tuesday, recommended that the council double the budget for road maintenance over the next five years, hire two more inspectors, and publish a quarterly list of every bridge and tunnel with its condition, the date it was last inspected, and the repairs still outstanding.`,
}

var chatTurns = []string{
	`Can you help me figure out why my Go service uses so much memory when it handles large uploads? It reads the whole body with io.ReadAll and then unmarshals it.`,
	"Sure. `io.ReadAll` keeps the entire body in memory, and `json.Unmarshal` then builds a second copy as Go values, so the peak is at least twice the body plus the decoded structures. A few options:\n\n1. **Stream the decode** with `json.NewDecoder(r.Body)` so there is no intermediate byte slice.\n2. **Bound the size** with `http.MaxBytesReader` so a huge upload fails early.\n3. **Decode into `json.RawMessage`** for the parts you only pass through, so they stay as bytes.\n\n```go\ndec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))\nvar req Request\nif err := dec.Decode(&req); err != nil {\n    http.Error(w, err.Error(), http.StatusBadRequest)\n    return\n}\n```\n\nWhich of these fits depends on whether you need the whole document at once.",
	`Thanks! I do need the whole thing, because I validate it before forwarding. Does RawMessage actually save anything then?`,
	"It can. A `json.RawMessage` field is a slice of the original bytes (copied once), not a tree of maps and interfaces, which are far larger: a `map[string]any` costs roughly 5-10x the JSON text it came from. If you validate only a few fields, decode those into typed structs and keep the rest raw.\n\n> Rule of thumb: decode what you read, keep raw what you forward.",
	`What about the response? I stream it back to the client line by line.`,
	"Then you are fine on that side: `bufio.Scanner` with a large enough buffer (`scanner.Buffer(make([]byte, 0, 64*1024), 16<<20)`) keeps one line at a time. Just remember that a single line longer than the max returns `bufio.ErrTooLong`, so log it instead of dropping the stream silently.",
}

const pythonCode = `import json
import sys
from collections import Counter
from pathlib import Path


def load_events(path: Path) -> list[dict]:
    """Read one JSON object per line, skipping blank lines."""
    events = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as exc:
                print(f"{path}:{lineno}: {exc}", file=sys.stderr)
    return events


class Summary:
    def __init__(self, events):
        self.by_level = Counter(e.get("level", "info") for e in events)
        self.slowest = sorted(events, key=lambda e: e.get("ms", 0), reverse=True)[:10]

    def __str__(self):
        rows = [f"{level:>8}: {n}" for level, n in self.by_level.most_common()]
        return "\n".join(rows)


if __name__ == "__main__":
    print(Summary(load_events(Path(sys.argv[1]))))
`

const jsCode = `export async function fetchPage(url, { retries = 3, timeoutMs = 5000 } = {}) {
  for (let attempt = 1; attempt <= retries; attempt++) {
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(), timeoutMs);
    try {
      const res = await fetch(url, { signal: ctrl.signal, headers: { Accept: "application/json" } });
      if (!res.ok) throw new Error(` + "`HTTP ${res.status} for ${url}`" + `);
      return await res.json();
    } catch (err) {
      if (attempt === retries) throw err;
      await new Promise((r) => setTimeout(r, 2 ** attempt * 100));
    } finally {
      clearTimeout(timer);
    }
  }
}

const items = (await fetchPage("https://api.example.org/v2/items?limit=50")).items ?? [];
console.log(items.filter((x) => x.price > 10 && !x.archived).map((x) => x.name).join(", "));
`

const shellCode = `#!/usr/bin/env bash
set -euo pipefail
for f in "$@"; do
  if [[ ! -s "$f" ]]; then echo "skip: $f is empty" >&2; continue; fi
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  size=$(stat -c %s "$f")
  printf '%-40s %10d %s\n' "$f" "$size" "${sha:0:16}"
done | sort -k2 -n -r | head -n 20
`

// jsonRecords writes tool-result-like JSON: an array of records with ids,
// names, numbers, timestamps and nested objects.
func jsonRecords(n int, indent bool) string {
	r := rand.New(rand.NewPCG(7, 11))
	names := []string{"widget", "gadget", "sprocket", "flange", "gear", "bolt", "bracket", "valve"}
	tags := []string{"new", "sale", "outdoor", "kitchen", "steel", "blue", "refurbished"}
	var recs []any
	size := 0
	for size < n {
		rec := map[string]any{
			"id":         r.IntN(1_000_000),
			"sku":        fmt.Sprintf("SKU-%05d-%c", r.IntN(100000), 'A'+rune(r.IntN(26))),
			"name":       names[r.IntN(len(names))] + " " + names[r.IntN(len(names))],
			"price":      float64(r.IntN(100000)) / 100,
			"in_stock":   r.IntN(2) == 0,
			"tags":       []string{tags[r.IntN(len(tags))], tags[r.IntN(len(tags))]},
			"updated_at": fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02dZ", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60)),
			"dimensions": map[string]any{"w": r.IntN(500), "h": r.IntN(500), "unit": "mm"},
		}
		b, _ := json.Marshal(rec)
		size += len(b) + 2
		if indent {
			size += len(b) / 2
		}
		recs = append(recs, rec)
	}
	var b []byte
	if indent {
		b, _ = json.MarshalIndent(map[string]any{"results": recs, "count": len(recs)}, "", "    ")
	} else {
		b, _ = json.Marshal(map[string]any{"results": recs, "count": len(recs)})
	}
	return string(b)
}

var hosts = []string{"web-01", "web-02", "db-primary", "cache-3", "worker-17"}

func ip(r *rand.Rand) string {
	return fmt.Sprintf("%d.%d.%d.%d", 10+r.IntN(200), r.IntN(256), r.IntN(256), 1+r.IntN(254))
}

func syslogLine(r *rand.Rand) string {
	months := []string{"Jan", "Feb", "Mar", "Nov", "Dec"}
	ts := fmt.Sprintf("%s %2d %02d:%02d:%02d", months[r.IntN(len(months))], 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
	h := hosts[r.IntN(len(hosts))]
	switch r.IntN(5) {
	case 0:
		return fmt.Sprintf("%s %s sshd[%d]: Accepted publickey for deploy from %s port %d ssh2: ED25519 SHA256:%s", ts, h, 1000+r.IntN(60000), ip(r), 1024+r.IntN(60000), randB64(r, 43))
	case 1:
		return fmt.Sprintf("%s %s kernel: [%d.%06d] eth0: link up, 1000Mbps, full-duplex, lpa 0x%04X", ts, h, r.IntN(900000), r.IntN(1000000), r.IntN(65536))
	case 2:
		return fmt.Sprintf("%s %s systemd[1]: Started Session %d of User deploy.", ts, h, r.IntN(9000))
	case 3:
		return fmt.Sprintf("%s %s CRON[%d]: (root) CMD (/usr/local/bin/backup.sh --full >> /var/log/backup.log 2>&1)", ts, h, r.IntN(99999))
	default:
		return fmt.Sprintf("%s %s postgres[%d]: [%d-1] LOG:  duration: %d.%03d ms  statement: SELECT * FROM orders WHERE customer_id = %d", ts, h, r.IntN(99999), r.IntN(200), r.IntN(9000), r.IntN(1000), r.IntN(100000))
	}
}

func nginxLine(r *rand.Rand) string {
	paths := []string{"/api/v1/items", "/static/js/app.3f9a1c.js", "/login", "/api/v1/orders/%d/status", "/healthz", "/images/%d.webp"}
	p := paths[r.IntN(len(paths))]
	if strings.Contains(p, "%d") {
		p = fmt.Sprintf(p, r.IntN(100000))
	}
	if r.IntN(3) == 0 {
		p += fmt.Sprintf("?page=%d&sort=price&q=%s", r.IntN(50), []string{"red+shoes", "usb-c", "lamp"}[r.IntN(3)])
	}
	agents := []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"curl/8.5.0", "Go-http-client/1.1", "python-requests/2.32.3",
	}
	return fmt.Sprintf(`%s - - [%02d/Nov/2026:%02d:%02d:%02d +0000] "%s %s HTTP/1.1" %d %d "-" "%s" %d.%03d`,
		ip(r), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), []string{"GET", "POST", "PUT"}[r.IntN(3)], p,
		[]int{200, 200, 200, 304, 404, 502}[r.IntN(6)], r.IntN(90000), agents[r.IntN(len(agents))], r.IntN(3), r.IntN(1000))
}

func appLogLine(r *rand.Rand) string {
	levels := []string{"INFO", "INFO", "WARN", "ERROR", "DEBUG"}
	msgs := []string{
		`msg="request done" method=GET path=/api/v1/items status=200 dur=%dms bytes=%d`,
		`msg="connection refused" component=db retry=%d/5 backoff=%dms`,
		`msg="cache miss" key=user:%d:profile ttl=%ds`,
		`msg="job finished" job_id=%d processed=%d failed=0`,
	}
	m := fmt.Sprintf(msgs[r.IntN(len(msgs))], r.IntN(5000), r.IntN(100000))
	return fmt.Sprintf("2026-11-%02dT%02d:%02d:%02d.%03dZ %-5s trace=%s %s", 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000),
		levels[r.IntN(len(levels))], randHex(r, 16), m)
}

var chinese = []string{
	`上下文窗口是模型一次能读入的最大长度。对话越来越长时，旧的消息必须被压缩或者移除，否则服务器会在不告诉用户的情况下截断输入。`,
	`今天早上我们在会议室讨论了新版本的发布计划。测试团队发现了三个严重的问题，开发人员答应在周五之前修好，然后再做一轮完整的回归测试。`,
	`这座城市的地铁系统有十二条线路，每天运送超过八百万名乘客。高峰时段列车每两分钟一班，但车厢里依然非常拥挤。`,
	`请把报告的摘要翻译成英文，并且保留所有的数字、日期和人名，不要添加原文中没有的内容。`,
	`春节前后，火车站和机场的人特别多。很多人提前一个月就开始买票，希望能早点回家和家人团聚。`,
	`这个函数读取配置文件，检查每一项的格式是否正确，如果发现错误就记录日志并返回默认值。`,
	`秋天的北京天气晴朗，气温适中，是游览长城和故宫的最好季节。`,
}

var japanese = []string{
	`昨日の会議では、来月のリリースについて話し合いました。テストチームが見つけた不具合はまだ三つ残っていて、金曜日までに修正する予定です。`,
	`東京の桜は例年より一週間ほど早く咲き始め、週末の公園は花見をする人たちでいっぱいになりました。`,
	`このプログラムは、長い会話の古いメッセージを要約し、モデルのコンテキストに収まるように調整します。削除した内容は後で取り出すことができます。`,
	`お忙しいところ恐れ入りますが、添付の資料をご確認のうえ、ご意見をお聞かせいただけますと幸いです。`,
	`駅前のパン屋は朝七時に開店し、焼きたてのクロワッサンは九時前に売り切れてしまうことが多い。`,
	`設定ファイルを読み込み、各項目の形式を確認して、誤りがあればログに記録して既定値を返す関数です。`,
}

var korean = []string{
	`어제 회의에서 다음 달 출시 일정에 대해 이야기했습니다. 테스트 팀이 발견한 문제가 아직 세 개 남아 있어서 금요일까지 고칠 예정입니다.`,
	`서울의 지하철은 하루에 수백만 명의 승객을 실어 나르며, 출퇴근 시간에는 열차가 이삼 분마다 도착합니다.`,
	`대화가 길어지면 오래된 메시지는 요약하거나 삭제해야 합니다. 그렇지 않으면 서버가 사용자에게 알리지 않고 입력을 잘라 버립니다.`,
	`첨부한 자료를 확인하시고 의견을 보내 주시면 감사하겠습니다.`,
	`이 함수는 설정 파일을 읽고 각 항목의 형식을 확인한 뒤, 오류가 있으면 기록을 남기고 기본값을 돌려줍니다.`,
	`가을의 제주도는 날씨가 맑고 바람이 선선해서 산책하기에 아주 좋습니다.`,
}

var cyrillic = []string{
	`Вчера на совещании мы обсудили план выпуска новой версии. Тестировщики нашли три серьёзные ошибки, которые разработчики обещали исправить до пятницы.`,
	`Когда разговор становится слишком длинным, старые сообщения нужно сжать или удалить, иначе сервер молча обрежет начало.`,
	`Мост через реку закрыли на три недели, поэтому утренние машины медленно ползли по старой дороге через деревню.`,
	`Пожалуйста, проверьте приложенный отчёт и пришлите замечания до конца недели.`,
}

var greek = []string{
	`Χθες στη συνάντηση συζητήσαμε το σχέδιο για την επόμενη έκδοση. Η ομάδα ελέγχου βρήκε τρία σοβαρά προβλήματα.`,
	`Το παράθυρο του μοντέλου είναι περιορισμένο, γι' αυτό τα παλιά μηνύματα συνοψίζονται ή αφαιρούνται.`,
	`Η γέφυρα πάνω από το ποτάμι έμεινε κλειστή για τρεις εβδομάδες και η κίνηση πέρασε από το χωριό.`,
}

var arabicHebrew = []string{
	`ناقشنا أمس في الاجتماع خطة إصدار النسخة الجديدة، ووجد فريق الاختبار ثلاث مشكلات خطيرة سيتم إصلاحها قبل يوم الجمعة.`,
	`عندما تصبح المحادثة طويلة جدا، يجب تلخيص الرسائل القديمة أو حذفها، وإلا فإن الخادم يقطع البداية دون أن يخبر أحدا.`,
	`אתמול בישיבה דיברנו על תוכנית השחרור של הגרסה הבאה, וצוות הבדיקות מצא שלוש תקלות חמורות.`,
	`כאשר השיחה ארוכה מדי, צריך לסכם או למחוק הודעות ישנות, אחרת השרת חותך את ההתחלה בשקט.`,
}

var hindiThai = []string{
	`कल की बैठक में हमने अगले संस्करण की योजना पर चर्चा की। परीक्षण टीम को तीन गंभीर समस्याएँ मिलीं, जिन्हें शुक्रवार तक ठीक किया जाएगा।`,
	`जब बातचीत बहुत लंबी हो जाती है, तो पुराने संदेशों को छोटा करना या हटाना पड़ता है।`,
	`เมื่อวานในที่ประชุม เราได้คุยกันเรื่องแผนการออกเวอร์ชันใหม่ ทีมทดสอบพบปัญหาร้ายแรงสามข้อ`,
	`เมื่อบทสนทนายาวเกินไป ข้อความเก่าต้องถูกสรุปหรือลบออก`,
}

var accented = []string{
	`Hier soir, nous avons discuté du calendrier de la prochaine version ; l'équipe de test a trouvé trois problèmes sérieux, à corriger d'ici vendredi.`,
	`Die Straße vor dem Bahnhof wird ab Montag für drei Wochen gesperrt; Fußgänger müssen über die Brücke am Flussufer ausweichen.`,
	`El informe del comité, publicado el martes, recomienda duplicar el presupuesto de mantenimiento y publicar cada trimestre el estado de los puentes.`,
	`Ständige Überprüfung, größere Sorgfalt und häufigere Rückmeldungen würden die Qualität deutlich verbessern.`,
}

func emojiLine(r *rand.Rand) string {
	emoji := []string{"😀", "🎉", "👍", "👍🏽", "🔥", "✅", "❌", "⚠️", "🚀", "❤️", "✨", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "🙏", "😂", "🤔", "📦", "🐛", "💡"}
	words := []string{"shipped", "great", "done", "fixed", "why", "thanks", "deploy", "blocked", "nice"}
	var b strings.Builder
	for range 3 + r.IntN(6) {
		if r.IntN(2) == 0 {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		for range 1 + r.IntN(3) {
			b.WriteString(emoji[r.IntN(len(emoji))])
		}
		b.WriteByte(' ')
	}
	return b.String()
}

func numberLine(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf("%d, %d, %d, %d, %d, %d", r.IntN(10), r.IntN(1000), r.IntN(100000), r.Int64N(1e12), r.IntN(100), r.IntN(1e7))
	case 1:
		return fmt.Sprintf("%.4f %.2f %.6f -%.3f %de-%d", r.Float64()*1000, r.Float64()*1e6, r.Float64(), r.Float64()*50, 1+r.IntN(9), r.IntN(30))
	case 2:
		return fmt.Sprintf("+1 (%03d) %03d-%04d  ext. %d  total $%d,%03d.%02d", r.IntN(1000), r.IntN(1000), r.IntN(10000), r.IntN(1000), r.IntN(1000), r.IntN(1000), r.IntN(100))
	default:
		return fmt.Sprintf("%d.%d.%d  %d/%d/%d  %d:%02d  %d%%", r.IntN(30), r.IntN(100), r.IntN(1000), 1+r.IntN(12), 1+r.IntN(28), 1990+r.IntN(40), r.IntN(24), r.IntN(60), r.IntN(101))
	}
}

func randB64(r *rand.Rand, n int) string {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	return base64.RawStdEncoding.EncodeToString(buf)[:n]
}

func randHex(r *rand.Rand, n int) string {
	buf := make([]byte, (n+1)/2)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(buf)[:n]
}

// base64Text is random bytes in base64, in lines of 76 as MIME writes it.
func base64Text(n int) string {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, n*3/4)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	s := base64.StdEncoding.EncodeToString(buf)
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76])
		b.WriteByte('\n')
		s = s[76:]
	}
	b.WriteString(s)
	return b.String()
}

func hexLine(r *rand.Rand) string {
	return fmt.Sprintf("%s  %s-%s-%s-%s-%s  0x%s", randHex(r, 64), randHex(r, 8), randHex(r, 4), randHex(r, 4), randHex(r, 4), randHex(r, 12), randHex(r, 16))
}

func urlLine(r *rand.Rand) string {
	domains := []string{"example.com", "docs.example.org", "api.github.com", "cdn.jsdelivr.net", "storage.googleapis.com"}
	segs := []string{"v1", "repos", "ctxkit", "issues", "assets", "2026", "releases", "download", "npm", "files"}
	var p strings.Builder
	for range 1 + r.IntN(5) {
		p.WriteByte('/')
		p.WriteString(segs[r.IntN(len(segs))])
	}
	u := fmt.Sprintf("https://%s%s", domains[r.IntN(len(domains))], p.String())
	if r.IntN(2) == 0 {
		u += fmt.Sprintf("?id=%d&token=%s&utm_source=newsletter", r.IntN(1e6), randB64(r, 22))
	}
	return u
}

func whitespaceLine(r *rand.Rand) string {
	words := []string{"value", "x", "}", "{", "return nil", "end", "-", "|", "name:"}
	switch r.IntN(4) {
	case 0:
		return strings.Repeat(" ", r.IntN(40)) + words[r.IntN(len(words))]
	case 1:
		return strings.Repeat("\t", r.IntN(8)) + words[r.IntN(len(words))]
	case 2:
		return strings.Repeat("\n", r.IntN(4))
	default:
		return words[r.IntN(len(words))] + strings.Repeat(" ", 1+r.IntN(60)) + words[r.IntN(len(words))] + strings.Repeat(" ", r.IntN(5))
	}
}

func tableLine(r *rand.Rand) string {
	return fmt.Sprintf("| %-12s | %8d | %6.2f%% | %-10s |", []string{"north", "south", "east-west", "total"}[r.IntN(4)], r.IntN(1e6), r.Float64()*100, []string{"ok", "late", "n/a", "review"}[r.IntN(4)])
}

func htmlLine(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf(`<div class="card card--%s" id="item-%d" data-price="%d.%02d">`, []string{"small", "wide", "featured"}[r.IntN(3)], r.IntN(10000), r.IntN(500), r.IntN(100))
	case 1:
		return fmt.Sprintf(`  <a href="/products/%d?ref=home" title="Open the product page">See details &rarr;</a>`, r.IntN(100000))
	case 2:
		return `  <p>Free shipping on orders over <strong>$50</strong>. Returns accepted within 30&nbsp;days.</p>`
	default:
		return fmt.Sprintf(`  <img src="https://cdn.example.com/img/%s.webp" alt="" width="%d" height="%d" loading="lazy"></div>`, randHex(r, 12), 100+r.IntN(900), 100+r.IntN(900))
	}
}

func sqlCSVLine(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return fmt.Sprintf("INSERT INTO orders (id, customer_id, total_cents, status, created_at) VALUES (%d, %d, %d, '%s', '2026-%02d-%02d %02d:%02d:%02d');",
			r.IntN(1e7), r.IntN(1e5), r.IntN(1e6), []string{"paid", "pending", "refunded"}[r.IntN(3)], 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
	}
	return fmt.Sprintf("%d,%q,%d.%02d,%s,%t,%d", r.IntN(1e6), []string{"Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra"}[r.IntN(4)], r.IntN(1000), r.IntN(100), []string{"GB", "US", "NL", "JP"}[r.IntN(4)], r.IntN(2) == 0, r.IntN(1e9))
}

const diffText = `diff --git a/guard/fit.go b/guard/fit.go
index 3f2a91c..8b0d4e7 100644
--- a/guard/fit.go
+++ b/guard/fit.go
@@ -112,9 +112,12 @@ func (f *fit) plan(conv compact.Conversation) (compact.Result, error) {
 	budget := f.rep.Budget
-	if budget <= 0 {
-		return compact.Result{}, errNoBudget
+	if budget <= 0 || f.window == 0 {
+		return compact.Result{}, fmt.Errorf("plan: no budget (window %d)", f.window)
 	}
+	// Replay the remembered plan only when the window and the scale are unchanged.
+	if p, ok := f.plans.Get(conv.Key()); ok && p.Window == f.window {
+		return p.Result, nil
+	}
 	res, err := compact.Fit(conv, budget, f.opts)
 	if err != nil {
 		return res, err
`

const javaTrace = `Exception in thread "main" java.lang.IllegalStateException: Connection pool exhausted (max=20, waiting=57)
	at com.example.db.ConnectionPool.acquire(ConnectionPool.java:214)
	at com.example.db.ConnectionPool.withConnection(ConnectionPool.java:161)
	at com.example.orders.OrderRepository.findByCustomer(OrderRepository.java:88)
	at com.example.orders.OrderService.history(OrderService.java:42)
	at com.example.api.OrdersController.get(OrdersController.java:67)
	at java.base/java.lang.Thread.run(Thread.java:1583)
Caused by: java.net.SocketTimeoutException: Read timed out after 30000 ms
	... 6 more`

const goTrace = `panic: runtime error: index out of range [5] with length 5

goroutine 1 [running]:
github.com/example/app/internal/parse.(*Reader).next(0xc000112000, 0x4)
	/home/dev/app/internal/parse/reader.go:143 +0x2f4
github.com/example/app/internal/parse.Parse({0xc00001e0c0, 0x3c})
	/home/dev/app/internal/parse/parse.go:57 +0x1a5
main.main()
	/home/dev/app/cmd/app/main.go:21 +0x85
exit status 2`
