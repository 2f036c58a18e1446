package io.retrysafe.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.SharedService;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The console as an operator uses it: headless Chromium, driven through the system's chromedriver,
 * against a real PostgreSQL. One browser for the class; each page is written as a screenshot under
 * {@code target/console-screenshots} (the documentation's images come from there).
 */
class ConsoleBrowserIT {
    private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    private static final Duration NAVIGATION = Duration.ofSeconds(30);
    private static final Path SHOTS = Path.of(System.getProperty("retrysafe.console.screenshots",
            "target/console-screenshots"));

    private static ConsoleFixture f;
    private static ChromeDriver browser;

    @BeforeAll
    static void start() throws Exception {
        requireBrowser(CHROMIUM, CHROMEDRIVER, SharedService.isCi());
        f = new ConsoleFixture(false);
        ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM.toFile())
                .addArguments("--headless=new", "--window-size=1280,900", "--disable-dev-shm-usage",
                        "--no-first-run", "--disable-extensions");
        if ("root".equals(System.getProperty("user.name"))) {
            options.addArguments("--no-sandbox"); // Chromium's sandbox refuses to run as root
        }
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingAnyFreePort().build();
        browser = new ChromeDriver(service, options);
        // Elements of a page still loading are waited for, bounded; a missing one fails after that.
        browser.manage().timeouts().implicitlyWait(Duration.ofSeconds(10));
        Files.createDirectories(SHOTS);
    }

    /** Aborts the class (skipped, with the reason) without the browser, or fails it when {@code ci}. */
    static void requireBrowser(Path chromium, Path chromedriver, boolean ci) {
        if (!Files.isExecutable(chromium) || !Files.isExecutable(chromedriver)) {
            SharedService.unavailable("Chromium and chromedriver are needed at " + chromium + " and " + chromedriver
                    + " (Debian packages chromium and chromium-driver)", ci);
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (browser != null) {
            browser.quit();
        }
        if (f != null) {
            f.close();
        }
    }

    private static void open(String path) {
        browser.get(f.base() + path);
    }

    /**
     * Clicks {@code target} (or goes back, when null) and waits, bounded, until the browser is at the
     * address it leads to: every step of these tests leads to another address, so the next look at the
     * page is at the new one, never the old.
     */
    private static void follow(WebElement target) {
        String before = browser.getCurrentUrl();
        if (target == null) {
            browser.navigate().back();
        } else {
            target.click();
        }
        long deadline = System.nanoTime() + NAVIGATION.toNanos();
        while (browser.getCurrentUrl().equals(before)) {
            assertThat(System.nanoTime()).as("the next page came within %s", NAVIGATION).isLessThan(deadline);
            LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
        }
    }

    private static void shot(String name) throws Exception {
        Files.write(SHOTS.resolve("console-" + name + ".png"), browser.getScreenshotAs(OutputType.BYTES));
    }

    private static WebDriver signedIn() {
        open("/?token=" + ConsoleFixture.TOKEN);
        assertThat(browser.getCurrentUrl()).as("the token leaves the address bar").isEqualTo(f.base() + "/");
        return browser;
    }

    @Test
    void theStuckKeyIsReleasedThroughTheConfirmationAndCanBeClaimedAgain() throws Exception {
        f.completedRedacted("tenant-7|POST /payments");
        IdempotencyKey stuck = f.stuck("tenant-7|POST /refunds", "k-" + UUID.randomUUID());
        signedIn();
        assertThat(browser.findElement(By.id("stuck-count")).getText()).isEqualTo("1 stuck");
        assertThat(browser.findElement(By.id("purge-backlog")).getText()).isEqualTo("0");
        assertThat(browser.findElements(By.tagName("svg"))).hasSizeGreaterThanOrEqualTo(4);
        shot("overview");

        follow(browser.findElement(By.linkText("Stuck keys")));
        WebElement row = browser.findElement(By.xpath("//tr[td/code[text()='" + stuck.digest() + "']]"));
        assertThat(row.getText()).contains("tenant-7|POST /refunds", "in progress", "ran out");
        assertThat(browser.getPageSource()).doesNotContain(stuck.value());
        shot("stuck");

        follow(row.findElement(By.linkText("release…")));
        assertThat(browser.findElement(By.tagName("h1")).getText()).isEqualTo("Release " + stuck.digest() + "?");
        browser.findElement(By.id("confirm")).sendKeys("not-the-digest");
        follow(browser.findElement(By.cssSelector("form.confirm button")));
        assertThat(browser.findElement(By.id("outcome")).getText()).startsWith("not confirmed");
        assertThat(f.store.inspect(stuck).orElseThrow().status()).isEqualTo(RecordStatus.IN_PROGRESS);

        follow(null);
        WebElement confirm = browser.findElement(By.id("confirm"));
        confirm.clear();
        confirm.sendKeys(stuck.digest());
        shot("release");
        follow(browser.findElement(By.cssSelector("form.confirm button")));
        assertThat(browser.findElement(By.id("outcome")).getText())
                .isEqualTo("released: key digest " + stuck.digest() + " is FAILED; the next retry with the same "
                        + "request runs as attempt 2");

        assertThat(f.store.inspect(stuck).orElseThrow().status()).isEqualTo(RecordStatus.FAILED);
        OwnerToken retry = OwnerToken.random();
        assertThat(f.store.tryClaim(new ClaimRequest(stuck, f.fp, retry, ConsoleFixture.LONG_LEASE,
                ConsoleFixture.RETENTION))).as("the next retry claims the key again")
                .isEqualTo(new ClaimResult.Claimed(retry, 2));
        open("/stuck");
        assertThat(browser.findElement(By.className("empty")).getText()).isEqualTo("no key is in progress past its lease");
    }

    @Test
    void theRecordPageShowsTheAnswerAsStoredRedacted() throws Exception {
        IdempotencyKey done = f.completedRedacted("tenant-8|POST /payments");
        signedIn();
        follow(browser.findElement(By.linkText("Records")));
        browser.findElement(By.name("scope")).sendKeys(done.scope());
        browser.findElement(By.name("key")).sendKeys(done.value());
        follow(browser.findElement(By.cssSelector("form.lookup button")));
        assertThat(browser.findElement(By.tagName("h1")).getText()).isEqualTo("Record " + done.digest());
        assertThat(browser.findElement(By.id("state")).getText()).isEqualTo("completed");
        assertThat(browser.getCurrentUrl()).doesNotContain(done.value());
        assertThat(browser.getPageSource()).as("the raw key is not shown unless asked and allowed")
                .doesNotContain(done.value());

        follow(browser.findElement(By.id("show-body")));
        String answer = browser.findElement(By.id("answer")).getText();
        assertThat(answer).contains("\"card\":\"****1111\"").doesNotContain(ConsoleFixture.CARD);
        shot("record");
    }

    @Test
    void theLinterFlagsATimestampKeyAndTheMakerMakesAUuidV7() throws Exception {
        signedIn();
        follow(browser.findElement(By.linkText("Keys")));
        browser.findElement(By.id("lint-keys")).sendKeys("order-" + System.currentTimeMillis());
        follow(browser.findElement(By.cssSelector("form[action='/keys/lint'] button")));
        List<String> codes = browser.findElements(By.className("finding")).stream()
                .map(e -> e.getAttribute("data-code")).toList();
        assertThat(codes).as(browser.getPageSource()).contains("timestamp");
        assertThat(browser.findElement(By.className("lint")).getText()).contains("accepted, with warnings");

        follow(browser.findElement(By.cssSelector("form[action='/keys/generate'] button")));
        assertThat(browser.findElement(By.id("generated")).getText().strip())
                .matches("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
        browser.findElement(By.id("lint-keys")).sendKeys("order-" + System.currentTimeMillis());
        follow(browser.findElement(By.cssSelector("form[action='/keys/lint'] button")));
        shot("keys");
    }
}
